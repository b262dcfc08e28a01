"""Schedules held by the kill switch on AWS, and caught up once it is lifted.

A manifest schedule that EventBridge Scheduler fires while the switch is on is not run: its
slot is kept in the store (a claim record per schedule). SchedulerFunction's sweep (a rate
schedule of the stack) looks, once the switch is off, for held slots and deals with them by
the schedule's `catch_up` policy, as `agentkit serve` does after a restart: `skip` drops
them, `once` fires the latest, `all` fires each (at most `CATCH_UP_CAP`). Every held slot is
recorded in the schedule's ledger with what was done about it.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from agentkit.scheduling.catch_up import LEDGER_TTL, SlotLedger, slots_to_fire

log = logging.getLogger("agentkit.aws.scheduler")


def held_key(schedule_id: str) -> str:
    return f"schedule-held:{schedule_id}"


async def switch_on(host: Any) -> bool:
    switch = host.runtime.ports.switch
    return switch is not None and bool((await switch.read()).on)


async def hold(host: Any, schedule_id: str, slot: datetime) -> dict[str, Any]:
    """Keep `slot` of the schedule for when the switch is lifted."""
    slots = await _held(host, schedule_id)
    slots.append(slot)
    detail = json.dumps(sorted({s.isoformat() for s in slots}))
    await host.store.settle_claim(held_key(schedule_id), "held", LEDGER_TTL, detail=detail)
    log.info("schedule %s held: the agent's kill switch is on", schedule_id)
    return {"scheduleId": schedule_id, "held": True, "sessionIds": []}


async def catch_up_held(host: Any, now: datetime | None = None) -> int:
    """Once the switch is off, fire the held slots by each schedule's `catch_up`; returns
    how many slots were fired (0 while the switch is on)."""
    if await switch_on(host):
        return 0
    now = now or datetime.now(UTC)
    ledger = SlotLedger(host.store)
    fired = 0
    for spec in host.bundle.manifest.schedules:
        slots = await _held(host, spec.id)
        if not slots:
            continue
        await host.store.release_claim(held_key(spec.id))
        chosen = slots_to_fire(spec.catch_up, slots)
        await ledger.note_missed(spec.id, slots, len(slots), chosen, spec.catch_up, now)
        for _ in chosen:
            try:
                await host.schedules.dispatch_schedule(spec.id)
                fired += 1
            except Exception:
                log.exception("schedule %s: a held slot could not be fired", spec.id)
    return fired


async def _held(host: Any, schedule_id: str) -> list[datetime]:
    claim = await host.store.get_claim(held_key(schedule_id))
    try:
        raw = json.loads(claim.detail) if claim is not None and claim.detail else []
    except ValueError:
        raw = []
    out = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append(datetime.fromisoformat(item))
        except (TypeError, ValueError):
            continue
    return sorted(out)


__all__ = ["catch_up_held", "held_key", "hold", "switch_on"]
