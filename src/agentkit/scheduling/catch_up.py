"""Occurrences a schedule missed while its host was down, and what to do about them.

Each schedule's last fired slot is kept in the store (`SlotLedger`). When `agentkit serve`
starts again, the slots between that one and now were missed. A schedule's `catch_up`
says what to do with them:

- `"skip"`: nothing; the schedule waits for its next slot;
- `"once"` (the default): fire once, for the latest missed slot;
- `"all"`: fire each missed slot, oldest first, at most `CATCH_UP_CAP` of them (the most
  recent ones).

Every missed slot is recorded, fired or not, with what was done about it, so
`GET /v1/dev/schedules` can show it; nothing is missed silently.

The ledger is one record per schedule kept through the store's claim records (a put and a
get with a TTL), so it works the same on every store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentkit.cron.standard import next_fire

if TYPE_CHECKING:
    from agentkit.project.manifest import ScheduleSpec
    from agentkit.store.base import Claim

__all__ = [
    "CATCH_UP_CAP",
    "CatchUp",
    "Ledger",
    "ListsSchedules",
    "SlotLedger",
    "describe_schedules",
    "missed_slots",
    "slots_to_fire",
]

log = logging.getLogger("agentkit.schedules")

CatchUp = Literal["skip", "once", "all"]
CATCH_UP_CAP = 10
# How many missed slots a schedule's record keeps (newest last) for the dev listing.
KEPT_MISSES = 50
LEDGER_TTL = 400 * 86400.0  # longer than a yearly schedule's gap
# A host down for longer than this many slots is not walked slot by slot.
MAX_COUNTED = 10_000


class LedgerStore(Protocol):
    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None: ...
    async def get_claim(self, key: str) -> Claim | None: ...


@dataclass(slots=True)
class Ledger:
    """One schedule's record: its last fired slot and the slots it missed."""

    last_slot: datetime | None = None
    missed: list[dict[str, Any]] = field(default_factory=list)


def missed_slots(cron: str, last: datetime, now: datetime) -> tuple[list[datetime], int]:
    """The slots after `last` and at or before `now`: the newest `CATCH_UP_CAP` of them,
    oldest first, and how many there were in all (counted up to `MAX_COUNTED`)."""
    found: list[datetime] = []
    total = 0
    slot = next_fire(cron, last)
    while slot <= now and total < MAX_COUNTED:
        total += 1
        found.append(slot)
        if len(found) > CATCH_UP_CAP:
            found.pop(0)
        slot = next_fire(cron, slot)
    return found, total


def slots_to_fire(policy: str, missed: list[datetime]) -> list[datetime]:
    """Which of the `missed` slots (oldest first) to fire under `policy`."""
    if not missed or policy == "skip":
        return []
    if policy == "all":
        return missed[-CATCH_UP_CAP:]
    return missed[-1:]


class SlotLedger:
    """Each schedule's last fired slot and missed slots, kept in the store."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    @staticmethod
    def key(schedule_id: str) -> str:
        return f"schedule-ledger:{schedule_id}"

    async def load(self, schedule_id: str) -> Ledger:
        claim = await self._store.get_claim(self.key(schedule_id))
        try:
            raw = json.loads(claim.detail) if claim is not None and claim.detail else {}
        except ValueError:
            raw = {}
        if not isinstance(raw, dict):
            raw = {}
        last = raw.get("lastSlot")
        missed = raw.get("missed")
        return Ledger(
            last_slot=datetime.fromisoformat(last) if isinstance(last, str) else None,
            missed=[m for m in missed if isinstance(m, dict)] if isinstance(missed, list) else [],
        )

    async def fired(self, schedule_id: str, slot: datetime) -> None:
        """Record `slot` as the schedule's latest fired (or caught-up) slot."""
        ledger = await self.load(schedule_id)
        if ledger.last_slot is None or slot > ledger.last_slot:
            ledger.last_slot = slot
        await self._save(schedule_id, ledger)

    async def note_missed(
        self,
        schedule_id: str,
        missed: list[datetime],
        total: int,
        fired: list[datetime],
        policy: str,
        now: datetime,
    ) -> None:
        """Record the missed slots (and how many went uncounted past the cap)."""
        ledger = await self.load(schedule_id)
        noticed = now.isoformat()
        chosen = set(fired)
        for slot in missed:
            action = "fired" if slot in chosen else "skipped"
            ledger.missed.append(
                {
                    "slot": slot.isoformat(),
                    "action": action,
                    "catchUp": policy,
                    "noticedAt": noticed,
                }
            )
            log.warning(
                "schedule %s missed its %s slot (%s)", schedule_id, slot.isoformat(), action
            )
        if total > len(missed):
            ledger.missed.append(
                {
                    "slot": None,
                    "action": "skipped",
                    "catchUp": policy,
                    "noticedAt": noticed,
                    "earlierSlots": total - len(missed),
                }
            )
            log.warning(
                "schedule %s missed %d earlier slots (skipped)", schedule_id, total - len(missed)
            )
        ledger.missed = ledger.missed[-KEPT_MISSES:]
        if missed and (ledger.last_slot is None or missed[-1] > ledger.last_slot):
            ledger.last_slot = missed[-1]  # dealt with, fired or not
        await self._save(schedule_id, ledger)

    async def _save(self, schedule_id: str, ledger: Ledger) -> None:
        body = {
            "lastSlot": ledger.last_slot.isoformat() if ledger.last_slot else None,
            "missed": ledger.missed,
        }
        await self._store.settle_claim(
            self.key(schedule_id), "ledger", LEDGER_TTL, detail=json.dumps(body)
        )


@runtime_checkable
class ListsSchedules(Protocol):
    """Optional, on a mount's host: its schedules as `describe_schedules` shows them
    (`GET /v1/dev/schedules`; without it the list is empty)."""

    async def list_schedules(self) -> list[dict[str, Any]]: ...


async def describe_schedules(
    specs: Iterable[ScheduleSpec], ledger: SlotLedger, next_slots: Mapping[str, datetime]
) -> list[dict[str, Any]]:
    """Each schedule as `GET /v1/dev/schedules` shows it: cron, policy, next and last slot,
    and the slots it missed (newest last)."""
    out: list[dict[str, Any]] = []
    for spec in specs:
        kept = await ledger.load(spec.id)
        upcoming = next_slots.get(spec.id)
        out.append(
            {
                "scheduleId": spec.id,
                "cron": spec.cron,
                "kind": spec.kind,
                "catchUp": spec.catch_up,
                "nextSlot": upcoming.isoformat() if upcoming else None,
                "lastSlot": kept.last_slot.isoformat() if kept.last_slot else None,
                "missed": kept.missed,
            }
        )
    return out
