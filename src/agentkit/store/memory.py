"""`MemoryStore`: the whole `Store` contract in one process's memory.

For tests and for embedding; nothing survives the process. Safe to share between asyncio
tasks and threads (each running its own event loop): one lock guards the state, and
followers are woken by appends through `Notifier`, never by polling. Records and events
are handed out as stored, not copied: treat them, and their `data`, as read-only.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentkit.errors import LeaseLost, SessionExists, SessionNotFound
from agentkit.events import Event, EventDraft, now_iso
from agentkit.reminders import ReminderRecord
from agentkit.sessions import SessionRecord
from agentkit.store._evalruns import detached, newest_first, run_id_of
from agentkit.store._notify import Notifier
from agentkit.store.base import Claim, Lease, Page
from agentkit.store.blobs import MemoryBlobs
from agentkit.store.ids import (
    created_ms,
    decode_cursor,
    encode_cursor,
    validate_idempotency_key,
    validate_name,
    validate_session_id,
)
from agentkit.store.large_events import BLOBS_KEY, offload_large, restore, with_full_data
from agentkit.store.listing import StartedWindow

Clock = Callable[[], float]


@dataclass
class _Session:
    record: SessionRecord
    events: list[Event] = field(default_factory=list)
    lease: Lease | None = None
    interrupt: bool | str = False  # True: any turn; a turn id: that turn only


class MemoryStore:
    """An in-process `Store`. `clock` (epoch seconds) drives leases and idempotency expiry."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._keys: dict[tuple[str, str], str] = {}
        self._reminders: dict[str, ReminderRecord] = {}
        self._eval_runs: dict[str, dict[str, Any]] = {}
        self._claims: dict[str, float] = {}
        self._claim_states: dict[str, tuple[str, str | None]] = {}
        self._notifier = Notifier()
        # Large payloads go through blobs here too, so the contract is the same everywhere.
        self.blobs = MemoryBlobs(clock)

    # sessions

    async def create_session(self, record: SessionRecord) -> None:
        validate_session_id(record.id)
        with self._lock:
            if record.id in self._sessions:
                raise SessionExists(record.id)
            self._sessions[record.id] = _Session(record)
            if record.continuation_key is not None:
                self._keys[(record.channel_id, record.continuation_key)] = record.id

    async def get_session(self, session_id: str) -> SessionRecord | None:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.get(session_id)
            return found.record if found else None

    async def list_sessions(
        self,
        principal: str | None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        after = decode_cursor(cursor) if cursor is not None else None
        limit = max(1, limit)
        with self._lock:
            records = [
                s.record
                for s in self._sessions.values()
                if principal is None or s.record.principal == principal
            ]
        keyed = sorted(((created_ms(r.created_at), r.id), r) for r in records)
        keyed.reverse()
        if after is not None:
            keyed = [(k, r) for k, r in keyed if k < after]
        if started is not None:
            keyed = [(k, r) for k, r in keyed if started.holds(encode_cursor(*k))]
        page = keyed[:limit]
        next_cursor = None
        if len(keyed) > limit:
            last_key = page[-1][0]
            next_cursor = encode_cursor(*last_key)
        return Page(items=[r for _, r in page], cursor=next_cursor)

    async def find_session(self, channel_id: str, continuation_key: str) -> SessionRecord | None:
        with self._lock:
            session_id = self._keys.get((channel_id, continuation_key))
            found = self._sessions.get(session_id) if session_id else None
            return found.record if found else None

    async def touch_session(self, session_id: str) -> None:
        validate_session_id(session_id)
        with self._lock:
            found = self._require(session_id)
            found.record = replace(found.record, updated_at=now_iso())

    async def delete_session(self, session_id: str) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.pop(session_id, None)
            if found is None:
                return False
            key = found.record.continuation_key
            if key is not None and self._keys.get((found.record.channel_id, key)) == session_id:
                del self._keys[(found.record.channel_id, key)]
        self._notifier.notify(session_id)
        return True

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None or found.record.token_hash != expected_hash:
                return False
            found.record = found.record.with_token_hash(new_hash)
            return True

    # events

    async def append(
        self, session_id: str, drafts: Sequence[EventDraft], *, lease_holder: str | None = None
    ) -> list[Event]:
        validate_session_id(session_id)
        stored = await offload_large(drafts, self.blobs)
        with self._lock:
            found = self._require(session_id)
            if lease_holder is not None:
                lease = found.lease
                if lease is None or lease.holder != lease_holder:
                    raise LeaseLost(session_id)
            start = len(found.events)
            recorded = [
                Event.from_draft(d, session_id=session_id, index=start + i)
                for i, d in enumerate(stored)
            ]
            found.events.extend(recorded)
        if recorded:
            self._notifier.notify(session_id)
        return with_full_data(recorded, drafts, stored)

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        validate_session_id(session_id)
        start = max(0, start)
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None:
                return []
            end = None if limit is None else start + max(0, limit)
            events = found.events[start:end]
        return await restore(events, self.blobs)

    async def follow(self, session_id: str, start: int, timeout: float) -> list[Event]:
        validate_session_id(session_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        while True:
            with self._notifier.register(session_id) as waiter:
                events = await self.read(session_id, start)
                remaining = deadline - loop.time()
                if events or remaining <= 0 or session_id not in self._sessions:
                    return events
                await waiter.wait(remaining)

    async def next_index(self, session_id: str) -> int:
        validate_session_id(session_id)
        with self._lock:
            return len(self._require(session_id).events)

    # turn lease and interrupts

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._require(session_id)
            now = self._clock()
            lease = found.lease
            if lease is not None and lease.holder != holder and lease.expires_at > now:
                return False
            found.lease = Lease(holder=holder, expires_at=now + ttl)
            return True

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._require(session_id)
            now = self._clock()
            lease = found.lease
            if lease is None or lease.holder != holder or lease.expires_at <= now:
                return False
            found.lease = Lease(holder=holder, expires_at=now + ttl)
            return True

    async def release_lease(self, session_id: str, holder: str) -> None:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.get(session_id)
            if found is not None and found.lease is not None and found.lease.holder == holder:
                found.lease = None

    async def get_lease(self, session_id: str) -> Lease | None:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.get(session_id)
            lease = found.lease if found else None
            if lease is None or lease.expires_at <= self._clock():
                return None
            return lease

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        validate_session_id(session_id)
        with self._lock:
            self._require(session_id).interrupt = requested

    async def request_interrupt(
        self, session_id: str, turn_id: str, *, token_hash: str | None = None
    ) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._require(session_id)
            if token_hash is not None and found.record.token_hash != token_hash:
                return False
            found.interrupt = turn_id
            return True

    async def interrupt_requested(self, session_id: str, turn_id: str | None = None) -> bool:
        validate_session_id(session_id)
        with self._lock:
            found = self._sessions.get(session_id)
            flag = found.interrupt if found is not None else False
        return flag is True or (isinstance(flag, str) and flag == turn_id)

    # reminders

    async def put_reminder(self, reminder: ReminderRecord) -> None:
        validate_name(reminder.id, "reminder id")
        with self._lock:
            self._reminders[reminder.id] = reminder

    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None:
        validate_name(reminder_id, "reminder id")
        with self._lock:
            return self._reminders.get(reminder_id)

    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]:
        with self._lock:
            found = list(self._reminders.values())
        if active_only:
            found = [r for r in found if r.status == "active"]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    async def delete_reminder(self, reminder_id: str) -> bool:
        validate_name(reminder_id, "reminder id")
        with self._lock:
            return self._reminders.pop(reminder_id, None) is not None

    # eval runs

    async def put_eval_run(self, snapshot: dict[str, Any]) -> None:
        run_id = run_id_of(snapshot)
        copy = detached(snapshot)
        with self._lock:
            self._eval_runs[run_id] = copy

    async def get_eval_run(self, run_id: str) -> dict[str, Any] | None:
        validate_name(run_id, "eval run id")
        with self._lock:
            found = self._eval_runs.get(run_id)
        return detached(found) if found is not None else None

    async def list_eval_runs(self) -> list[dict[str, Any]]:
        with self._lock:
            found = [detached(s) for s in self._eval_runs.values()]
        return newest_first(found)

    # idempotency

    async def claim(self, key: str, ttl: float) -> bool:
        validate_idempotency_key(key)
        with self._lock:
            now = self._clock()
            expires = self._claims.get(key)
            if expires is not None and expires > now:
                return False
            if len(self._claims) > 10_000:
                self._claims = {k: e for k, e in self._claims.items() if e > now}
                self._claim_states = {
                    k: v for k, v in self._claim_states.items() if k in self._claims
                }
            self._claims[key] = now + ttl
            self._claim_states.pop(key, None)
            return True

    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None:
        validate_idempotency_key(key)
        with self._lock:
            self._claims[key] = self._clock() + ttl
            self._claim_states[key] = (state, detail)

    async def release_claim(self, key: str) -> None:
        validate_idempotency_key(key)
        with self._lock:
            self._claims.pop(key, None)
            self._claim_states.pop(key, None)

    async def get_claim(self, key: str) -> Claim | None:
        validate_idempotency_key(key)
        with self._lock:
            expires = self._claims.get(key)
            if expires is None or expires <= self._clock():
                return None
            state, detail = self._claim_states.get(key, ("started", None))
            return Claim(state, expires, detail)

    async def blob_payloads(self) -> list[dict[str, Any]]:
        """Every stored payload that names blobs (for `agentkit.store.blob_sweep`)."""
        with self._lock:
            return [
                e.data
                for found in self._sessions.values()
                for e in found.events
                if BLOBS_KEY in e.data
            ]

    async def close(self) -> None:
        return None

    def _require(self, session_id: str) -> _Session:
        found = self._sessions.get(session_id)
        if found is None:
            raise SessionNotFound(session_id)
        return found
