"""`FileStore`: the embedded default store, plain files under one state folder.

Layout (`root` is the `.agentkit` state folder)::

    sessions/<id>/session.json         metadata (atomic replace; token stored hashed)
    sessions/<id>/events.ndjson        the durable stream, one event per line
    sessions/<id>/lease.json           the turn lease, while held
    sessions/<id>/interrupt            present while a stop is requested
    sessions/<id>/workspace/           the harness working folder
    traces/<id>.ndjson                 written by `agentkit run`
    tool-calls/<callId>/               deterministic tool-call workspaces
    reminders/<id>.json                one file per reminder
    idempotency/<sha256(key)>.json     claims, with their expiry
    index/                             listing and continuation-key indexes
    locks/                             lock files (never removed; see `_fs.exclusive`)

Every mutation of a session happens under its lock (a thread lock plus an `flock`, so
threads, event loops and processes all exclude each other). Blocking file work runs in
worker threads, never on the event loop.

`follow` is woken directly by appends made through any `FileStore` in this process. Appends
by another process are noticed by a cheap `stat` of `events.ndjson` every
`poll_interval` seconds (0.25 s by default) while a follower waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentkit.errors import SessionExists, SessionNotFound, StoreError
from agentkit.events import Event, EventDraft, now_iso
from agentkit.scheduling.records import ReminderRecord
from agentkit.sessions import SessionRecord
from agentkit.store._eventlog import EventLog
from agentkit.store._fileindex import SessionIndex
from agentkit.store._fs import exclusive, read_json, unlink, write_json_atomic
from agentkit.store._notify import Notifier
from agentkit.store.base import Lease, Page
from agentkit.store.ids import (
    decode_cursor,
    encode_cursor,
    hash_key,
    validate_idempotency_key,
    validate_name,
    validate_session_id,
)

Clock = Callable[[], float]

# Shared by every FileStore of the process, keyed by file path, so an append through one
# instance wakes followers of another instance on the same folder.
_NOTIFIER = Notifier()
_PURGE_EVERY = 600.0


class FileStore:
    """A `Store` over plain files under `root` (its folders are made here if missing).

    `fsync_events=True` flushes every append to disk before it returns; by default appends
    survive a killed process but not a power cut (see docs/sessions.md). `cache_sessions`
    and `cache_bytes` bound how many sessions keep their parsed events in memory. Returned
    events are shared with that cache: treat them, and their `data`, as read-only.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock = time.time,
        fsync_events: bool = False,
        poll_interval: float = 0.25,
        cache_sessions: int = 256,
        cache_bytes: int = 256 << 20,
    ) -> None:
        self.root = Path(root).absolute()
        self._sessions = self.root / "sessions"
        self._locks = self.root / "locks"
        self._reminders = self.root / "reminders"
        self._claims = self.root / "idempotency"
        self._trash = self.root / ".trash"
        self._index = SessionIndex(self.root / "index")
        self._clock = clock
        self._fsync_events = fsync_events
        self._poll = poll_interval
        self._cache_size = max(1, cache_sessions)
        self._cache_bytes = cache_bytes
        self._logs: OrderedDict[str, EventLog] = OrderedDict()
        self._logs_guard = threading.Lock()
        self._last_purge = float("-inf")
        for folder in (self._sessions, self._locks, self._reminders, self._claims):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self._trash, ignore_errors=True)  # deletions a crash interrupted

    # paths other components use

    def session_dir(self, session_id: str) -> Path:
        return self._sessions / validate_session_id(session_id)

    def workspace_dir(self, session_id: str) -> Path:
        """The session's harness working folder (made when the session is created)."""
        return self.session_dir(session_id) / "workspace"

    def events_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "events.ndjson"

    def trace_path(self, session_id: str) -> Path:
        """Where `agentkit run` writes the session's trace (the folder is not created)."""
        return self.root / "traces" / f"{validate_session_id(session_id)}.ndjson"

    def tool_call_dir(self, call_id: str) -> Path:
        """A deterministic tool call's scratch folder (not created)."""
        return self.root / "tool-calls" / validate_name(call_id, "tool call id")

    # sessions

    async def create_session(self, record: SessionRecord) -> None:
        folder = self.session_dir(record.id)
        await asyncio.to_thread(self._create_sync, record, folder)

    def _create_sync(self, record: SessionRecord, folder: Path) -> None:
        with self._lock(record.id):
            if (folder / "session.json").exists():
                raise SessionExists(record.id)
            self._index.add(record)
            (folder / "workspace").mkdir(parents=True, exist_ok=True)
            os.close(os.open(folder / "events.ndjson", os.O_WRONLY | os.O_CREAT, 0o600))
            write_json_atomic(folder / "session.json", record.to_dict())

    async def get_session(self, session_id: str) -> SessionRecord | None:
        folder = self.session_dir(session_id)
        return await asyncio.to_thread(self._get_sync, folder)

    @staticmethod
    def _get_sync(folder: Path) -> SessionRecord | None:
        raw = read_json(folder / "session.json")
        return SessionRecord.from_dict(raw) if isinstance(raw, dict) else None

    async def list_sessions(
        self, principal: str | None, *, limit: int = 50, cursor: str | None = None
    ) -> Page:
        after = encode_cursor(*decode_cursor(cursor)) if cursor is not None else None
        return await asyncio.to_thread(self._list_sync, principal, max(1, limit), after)

    def _list_sync(self, principal: str | None, limit: int, after: str | None) -> Page:
        markers = self._index.newest_first(principal, after)
        items: list[SessionRecord] = []
        last = 0
        for last, marker in enumerate(markers, start=1):  # noqa: B007 - read after the loop
            record = self._get_sync(self._sessions / self._index.session_of(marker))
            if record is not None:
                items.append(record)
                if len(items) == limit:
                    break
        more = last < len(markers)
        return Page(items=items, cursor=markers[last - 1] if more else None)

    async def find_session(self, channel_id: str, continuation_key: str) -> SessionRecord | None:
        def find() -> SessionRecord | None:
            session_id = self._index.lookup(channel_id, continuation_key)
            if session_id is None:
                return None
            record = self._get_sync(self.session_dir(session_id))
            if record is None or (record.channel_id, record.continuation_key) != (
                channel_id,
                continuation_key,
            ):
                return None
            return record

        return await asyncio.to_thread(find)

    async def touch_session(self, session_id: str) -> None:
        folder = self.session_dir(session_id)

        def touch() -> None:
            with self._lock(session_id):
                raw = read_json(folder / "session.json")
                if not isinstance(raw, dict):
                    raise SessionNotFound(session_id)
                self._rewrite(folder, raw, updatedAt=now_iso())

        await asyncio.to_thread(touch)

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        folder = self.session_dir(session_id)

        def rotate() -> bool:
            with self._lock(session_id):
                raw = read_json(folder / "session.json")
                if not isinstance(raw, dict) or raw.get("tokenHash") != expected_hash:
                    return False
                self._rewrite(folder, raw, tokenHash=new_hash, updatedAt=now_iso())
                return True

        return await asyncio.to_thread(rotate)

    @staticmethod
    def _rewrite(folder: Path, raw: dict[str, Any], **changes: Any) -> None:
        # Edits the stored JSON itself, so fields a newer version added survive.
        write_json_atomic(folder / "session.json", {**raw, **changes})

    async def delete_session(self, session_id: str) -> bool:
        folder = self.session_dir(session_id)
        events_key = str(folder / "events.ndjson")

        def delete() -> Path | None:
            with self._lock(session_id):
                record = self._get_sync(folder)
                if record is None:
                    return None
                trashed = self._move_to_trash(folder)
                self._index.remove(record)
                if trashed is None:
                    return None
            with self._logs_guard:
                self._logs.pop(session_id, None)
            return trashed

        trashed = await asyncio.to_thread(delete)
        if trashed is None:
            return False
        _NOTIFIER.notify(events_key)
        await asyncio.to_thread(shutil.rmtree, trashed, True)
        return True

    # events

    async def append(self, session_id: str, drafts: Sequence[EventDraft]) -> list[Event]:
        folder = self.session_dir(session_id)

        def append() -> list[Event]:
            with self._lock(session_id):
                self._require_exists(folder)
                return self._log(session_id).append(drafts, fsync=self._fsync_events)

        recorded = await asyncio.to_thread(append)
        if recorded:
            _NOTIFIER.notify(str(folder / "events.ndjson"))
        return recorded

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        validate_session_id(session_id)
        found = await asyncio.to_thread(self._read_sync, session_id, start, limit)
        return found or []

    def _read_sync(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        if not (self._sessions / session_id / "session.json").exists():
            return None
        return self._log(session_id).read(start, limit)

    async def follow(self, session_id: str, start: int, timeout: float) -> list[Event]:
        key = str(self.events_path(session_id))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        while True:
            with _NOTIFIER.register(key) as waiter:
                found = await asyncio.to_thread(self._read_sync, session_id, start, None)
                remaining = deadline - loop.time()
                if found is None:
                    return []
                if found or remaining <= 0:
                    return found
                # Woken at once by appends in this process; other processes' appends are
                # picked up by the read at the top of the next round.
                await waiter.wait(min(remaining, self._poll))

    async def next_index(self, session_id: str) -> int:
        folder = self.session_dir(session_id)

        def count() -> int:
            self._require_exists(folder)
            size = self._log(session_id).size()
            if size is None:
                raise SessionNotFound(session_id)
            return size

        return await asyncio.to_thread(count)

    # turn lease and interrupts

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=True)

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=False)

    async def _lease_op(self, session_id: str, holder: str, ttl: float, *, take_free: bool) -> bool:
        folder = self.session_dir(session_id)

        def op() -> bool:
            with self._lock(session_id):
                self._require_exists(folder)
                now = self._clock()
                lease = self._read_lease(folder)
                live = lease is not None and lease.expires_at > now
                mine = live and lease is not None and lease.holder == holder
                if not mine and (live or not take_free):
                    return False
                # Leases are short-lived: losing one to a power cut only frees it early.
                write_json_atomic(
                    folder / "lease.json",
                    {"holder": holder, "expiresAt": now + ttl},
                    fsync=False,
                )
                return True

        return await asyncio.to_thread(op)

    async def release_lease(self, session_id: str, holder: str) -> None:
        folder = self.session_dir(session_id)

        def release() -> None:
            with self._lock(session_id):
                lease = self._read_lease(folder)
                if lease is not None and lease.holder == holder:
                    unlink(folder / "lease.json")

        await asyncio.to_thread(release)

    async def get_lease(self, session_id: str) -> Lease | None:
        folder = self.session_dir(session_id)
        lease = await asyncio.to_thread(self._read_lease, folder)
        return lease if lease is not None and lease.expires_at > self._clock() else None

    @staticmethod
    def _read_lease(folder: Path) -> Lease | None:
        raw = read_json(folder / "lease.json")
        if not isinstance(raw, dict):
            return None
        return Lease(holder=str(raw["holder"]), expires_at=float(raw["expiresAt"]))

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        folder = self.session_dir(session_id)

        def flag() -> None:
            with self._lock(session_id):
                self._require_exists(folder)
                if requested:
                    (folder / "interrupt").touch()
                else:
                    unlink(folder / "interrupt")

        await asyncio.to_thread(flag)

    async def interrupt_requested(self, session_id: str) -> bool:
        flag = self.session_dir(session_id) / "interrupt"
        return await asyncio.to_thread(flag.exists)

    # reminders

    async def put_reminder(self, reminder: ReminderRecord) -> None:
        path = self._reminder_path(reminder.id)
        await asyncio.to_thread(write_json_atomic, path, reminder.to_dict())

    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None:
        path = self._reminder_path(reminder_id)
        raw = await asyncio.to_thread(read_json, path)
        return ReminderRecord.from_dict(raw) if isinstance(raw, dict) else None

    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]:
        def scan() -> list[ReminderRecord]:
            found: list[ReminderRecord] = []
            for entry in os.scandir(self._reminders):
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                raw = read_json(Path(entry.path))
                if isinstance(raw, dict):
                    found.append(ReminderRecord.from_dict(raw))
            return found

        found = await asyncio.to_thread(scan)
        if active_only:
            found = [r for r in found if r.status == "active"]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    async def delete_reminder(self, reminder_id: str) -> bool:
        return await asyncio.to_thread(unlink, self._reminder_path(reminder_id))

    def _reminder_path(self, reminder_id: str) -> Path:
        return self._reminders / f"{validate_name(reminder_id, 'reminder id')}.json"

    # idempotency

    async def claim(self, key: str, ttl: float) -> bool:
        path = self._claims / f"{hash_key(validate_idempotency_key(key))}.json"

        def claim() -> bool:
            with exclusive(self._locks / "_idempotency.lock"):
                now = self._clock()
                raw = read_json(path)
                if isinstance(raw, dict) and float(raw.get("expiresAt", 0)) > now:
                    return False
                write_json_atomic(path, {"expiresAt": now + ttl})
                if now - self._last_purge > _PURGE_EVERY:
                    self._last_purge = now
                    self._purge_claims(now)
                return True

        return await asyncio.to_thread(claim)

    def _purge_claims(self, now: float) -> None:
        for entry in os.scandir(self._claims):
            raw = read_json(Path(entry.path)) if entry.name.endswith(".json") else None
            if isinstance(raw, dict) and float(raw.get("expiresAt", 0)) <= now:
                unlink(Path(entry.path))

    async def close(self) -> None:
        with self._logs_guard:
            self._logs.clear()

    # internals

    def _move_to_trash(self, folder: Path) -> Path | None:
        # One rename makes the session vanish whole; removing its files can follow.
        trashed = self._trash / f"{folder.name}.{secrets.token_hex(4)}"
        for _ in range(3):
            self._trash.mkdir(exist_ok=True)
            try:
                os.rename(folder, trashed)
                return trashed
            except FileNotFoundError:
                if not folder.exists():
                    return None  # removed by hand meanwhile
                # Another store's start-up emptied the trash between mkdir and rename.
        raise StoreError(f"could not delete session {folder.name}")

    def _lock(self, session_id: str) -> contextlib.AbstractContextManager[None]:
        return exclusive(self._locks / f"{session_id}.lock")

    def _log(self, session_id: str) -> EventLog:
        with self._logs_guard:
            found = self._logs.get(session_id)
            if found is None:
                found = EventLog(
                    self._sessions / session_id / "events.ndjson",
                    session_id,
                    self._locks / f"{session_id}.lock",
                )
                self._logs[session_id] = found
                self._evict()
            else:
                self._logs.move_to_end(session_id)
            return found

    def _evict(self) -> None:
        # Bounded by count and by bytes parsed, so a few huge sessions cannot hog memory.
        total = sum(log.cached_bytes for log in self._logs.values())
        while len(self._logs) > 1 and (
            len(self._logs) > self._cache_size or total > self._cache_bytes
        ):
            _, dropped = self._logs.popitem(last=False)
            total -= dropped.cached_bytes

    @staticmethod
    def _require_exists(folder: Path) -> None:
        if not (folder / "session.json").exists():
            raise SessionNotFound(folder.name)
