"""`FileStore`: the embedded default store, plain files under one state folder.

Layout (`root` is the `.agentkit` state folder)::

    sessions/<id>/session.json         metadata, written once (token stored hashed)
    sessions/<id>/updates.ndjson       later changes to it (the token's hash): see
                                       `_filesession`
    sessions/<id>/events.ndjson        the durable stream, one event per line
    sessions/<id>/interrupt            present while a stop is requested
    sessions/<id>/lock                 the session's lock file, holding its turn lease
                                       (blank when free); on Windows `locks/<id>.lock`,
                                       the lease in `sessions/<id>/lease.json`
    sessions/<id>/workspace/           the harness working folder (made on first use)
    traces/<id>.ndjson                 written by `agentkit run`
    tool-calls/<callId>/               deterministic tool-call workspaces
    reminders/<id>.json                one file per reminder
    idempotency/<sha256(key)>.json     claims, with their expiry
    index/                             listing and continuation-key indexes
    locks/                             lock files of the store's own indexes

A lock file is removed only with its session's folder (a deletion moves the folder away
whole). A process still waiting on it then gets a lock nobody else can take again, and
finds the session gone; nobody can make a fresh lock file at that path, as `open` does not
create folders. (Sharing "the" lock with a newcomer would need the same session id created
again, and ids are random: `new_session_id`.)

Every mutation of a session happens under its lock (a thread lock plus an `flock`, so
threads, event loops and processes all exclude each other). Small operations on a free lock
(an append of a few events, a lease, a token, a new session's folder) run on the calling
thread: they take microseconds, less than handing them to a worker thread. Anything that
may wait (a lock held elsewhere, a large catch-up read, an `fsync`) runs in a worker
thread, never on the event loop. Lock files and each cached session's `events.ndjson` stay
open between uses (see `_fs` and `_eventlog`).

`follow` is woken directly by appends made through any `FileStore` in this process. Appends
by another process are noticed by a cheap `stat` of `events.ndjson` while a follower waits:
first after `poll_interval` seconds (0.25 s by default), then at twice the last gap, up to
`max_poll_interval` (4 s). A fixed 0.25 s check per follower cost an idle server holding a
thousand open streams a large share of a core; backing off cuts that about tenfold, and an
append from this process still wakes its followers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from agentkit.errors import LeaseLost, SessionExists, SessionNotFound, StoreError
from agentkit.events import Event, EventDraft, now_iso
from agentkit.sessions import SessionRecord
from agentkit.store._eventlog import CatchUpTooLarge, EventLog
from agentkit.store._fileindex import SessionIndex
from agentkit.store._filepaths import PathCache, SessionFiles
from agentkit.store._filerecords import FileRecords
from agentkit.store._filesession import RecordCache, append_update
from agentkit.store._fs import (
    exclusive,
    read_small,
    try_exclusive,
    unlink,
    write_all,
    write_atomic,
    write_in_place,
)
from agentkit.store._notify import Notifier
from agentkit.store._offload import offload
from agentkit.store.base import Lease, Page
from agentkit.store.ids import (
    decode_cursor,
    encode_cursor,
    validate_name,
    validate_session_id,
)

Clock = Callable[[], float]
T = TypeVar("T")

# Shared by every FileStore of the process, keyed by file path, so an append through one
# instance wakes followers of another instance on the same folder.
_NOTIFIER = Notifier()
_SUM_EVERY = 32  # new views between two checks of the cache's byte bound
_LEASE_WIDTH = 192  # the lease is rewritten in place at this width (longer holders fit too)
_JSON = msgspec.json.Encoder()  # a tenth of `json.dumps`'s cost for these small objects
# Lease file contents already parsed (`Lease` is frozen, so one may be shared).
_LEASES: dict[bytes, tuple[Lease | None]] = {}
_LEASES_KEPT = 1024


def _write_new(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SessionExists(os.path.basename(os.path.dirname(path))) from None
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        unlink(path)
        raise
    os.close(fd)


def _remember_lease(data: bytes, lease: Lease | None) -> None:
    if len(_LEASES) >= _LEASES_KEPT:
        _LEASES.clear()
    _LEASES[data] = (lease,)


def _parse_lease(data: bytes) -> Lease | None:
    try:
        raw = json.loads(data or b"null")
        # The holder's process: `agentkit serve` leaves a live process's lease alone.
        pid = raw.get("pid") if isinstance(raw, dict) else None
        return Lease(
            holder=str(raw["holder"]),
            expires_at=float(raw["expiresAt"]),
            pid=pid if isinstance(pid, int) else None,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


class FileStore(FileRecords):
    """A `Store` over plain files under `root` (its folders are made here if missing).

    `fsync=True` flushes every append and every `session.json` write to disk before it
    returns; by default they survive a killed process but not a power cut (see
    docs/sessions.md). `cache_sessions`
    and `cache_bytes` bound how many sessions keep their parsed events in memory. Returned
    events are shared with that cache: treat them, and their `data`, as read-only.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock = time.time,
        fsync: bool = False,
        poll_interval: float = 0.25,
        max_poll_interval: float = 4.0,
        cache_sessions: int = 256,
        cache_bytes: int = 256 << 20,
    ) -> None:
        self.root = Path(root).absolute()
        self._sessions = self.root / "sessions"
        self._locks = self.root / "locks"
        self._reminders = self.root / "reminders"
        self._claims = self.root / "idempotency"
        self._trash = self.root / ".trash"
        self._index = SessionIndex(self.root / "index", fsync=fsync)
        self._files = PathCache(self._sessions, self._locks)
        self._records = RecordCache()
        self._clock = clock
        self._fsync = fsync
        self._poll = poll_interval
        self._max_poll = max(poll_interval, max_poll_interval)
        self._cache_size = max(1, cache_sessions)
        self._cache_bytes = cache_bytes
        self._logs: OrderedDict[str, EventLog] = OrderedDict()
        self._logs_guard = threading.Lock()
        self._since_sum = 0
        self._last_purge = float("-inf")
        for folder in (self._sessions, self._locks, self._reminders, self._claims):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self._trash, ignore_errors=True)  # deletions a crash interrupted

    # paths other components use

    def session_dir(self, session_id: str) -> Path:
        return Path(self._files(session_id).folder)

    def workspace_dir(self, session_id: str) -> Path:
        """The session's harness working folder (made by whoever first puts files there:
        the engine seeds it before an agent tool first runs)."""
        return Path(self._files(session_id).workspace)

    def events_path(self, session_id: str) -> Path:
        return Path(self._files(session_id).events)

    def trace_path(self, session_id: str) -> Path:
        """Where `agentkit run` writes the session's trace (the folder is not created)."""
        return self.root / "traces" / f"{validate_session_id(session_id)}.ndjson"

    def tool_call_dir(self, call_id: str) -> Path:
        """A deterministic tool call's scratch folder (not created)."""
        return self.root / "tool-calls" / validate_name(call_id, "tool call id")

    # sessions

    async def create_session(self, record: SessionRecord) -> None:
        files = self._files(record.id)

        def make_folder() -> None:
            # First, and outside the lock: the session's lock file lives in this folder.
            # The workspace folder is made when first used (seeding, per-send files).
            try:
                os.mkdir(files.folder)
            except FileExistsError:
                pass  # the session exists (said under the lock), or a creation was cut short
            except FileNotFoundError:  # `sessions/` removed by hand
                os.makedirs(files.folder, exist_ok=True)

        def create() -> None:
            if files.exists():
                raise SessionExists(record.id)
            # Kept open: the session's first append writes through it.
            self._log(record.id).adopt_writer(
                os.open(files.events, os.O_WRONLY | os.O_CREAT, 0o600)
            )
            data = json.dumps(record.to_dict()).encode()
            if self._fsync:
                write_atomic(files.record, data)
            else:
                # Written directly, not through a temporary file and a rename (one file
                # creation fewer): nobody knows the id before this returns, and the session
                # is listed only after its record is whole.
                _write_new(files.record, data)
            # Kept as a reader would parse it (the caller's `metadata` is not shared).
            self._records.wrote(files.folder, json.loads(data))
            self._index.add(record)

        # A folder and a few files, on the calling thread (a hop to a worker thread cost
        # more than the creation itself on a healthy disk); with `fsync` the flushes make
        # it long, so then it runs in a worker thread.
        if self._fsync:
            await offload(make_folder)
        else:
            make_folder()
        await self._locked(record.id, create, inline=not self._fsync)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        # Two small files (or two `stat`s), read on the calling thread (see the docstring).
        return self._get_sync(self._files(session_id).folder)

    def _get_sync(self, folder: str) -> SessionRecord | None:
        raw = self._records.read(folder)
        return SessionRecord.from_dict(raw) if raw is not None else None

    async def list_sessions(
        self, principal: str | None, *, limit: int = 50, cursor: str | None = None
    ) -> Page:
        after = encode_cursor(*decode_cursor(cursor)) if cursor is not None else None
        return await offload(self._list_sync, principal, max(1, limit), after)

    def _list_sync(self, principal: str | None, limit: int, after: str | None) -> Page:
        markers = self._index.newest_first(principal, after)
        items: list[SessionRecord] = []
        last = 0
        for last, marker in enumerate(markers, start=1):  # noqa: B007 - read after the loop
            record = self._get_sync(self._files(self._index.session_of(marker)).folder)
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
            record = self._get_sync(self._files(session_id).folder)
            if record is None or (record.channel_id, record.continuation_key) != (
                channel_id,
                continuation_key,
            ):
                return None
            return record

        return await offload(find)

    async def touch_session(self, session_id: str) -> None:
        files = self._files(session_id)
        folder = files.folder

        def touch() -> None:
            raw = self._records.read(folder)
            if raw is None:
                raise SessionNotFound(session_id)
            self._update(files, raw, updatedAt=now_iso())

        await self._locked(session_id, touch, inline=not self._fsync)

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        files = self._files(session_id)
        folder = files.folder

        def rotate() -> bool:
            raw = self._records.read(folder)
            if raw is None or raw.get("tokenHash") != expected_hash:
                return False
            self._update(files, raw, tokenHash=new_hash, updatedAt=now_iso())
            return True

        return await self._locked(session_id, rotate, inline=not self._fsync)

    def _update(self, files: SessionFiles, raw: dict[str, Any], **changes: Any) -> None:
        # One append to `updates.ndjson` (not a new `session.json`: see `_filesession`),
        # carrying every field that ever changes, so its last line alone is current.
        # Written before returning survives a killed process; `fsync` adds a power cut.
        current = {"tokenHash": raw.get("tokenHash"), "updatedAt": raw.get("updatedAt")}
        folder = files.folder
        inode = self._records.updates_inode(folder)  # `raw` was just read under the lock
        append_update(
            folder, {**current, **changes}, fsync=self._fsync, lock=files.lock, inode=inode
        )
        # The next read (the next follow-up's ownership check) finds it without a parse.
        self._records.wrote(folder, {**raw, **changes})

    async def delete_session(self, session_id: str) -> bool:
        files = self._files(session_id)
        folder, events_key = files.folder, files.events

        def delete() -> Path | None:
            with self._lock(session_id):
                # (No lock when the folder, and the lock file in it, is gone: then so is
                # the record, and nothing is deleted.)
                record = self._get_sync(folder)
                if record is None:
                    return None
                trashed = self._move_to_trash(folder)
                self._index.remove(record)
                if trashed is None:
                    return None
            with self._logs_guard:
                dropped = self._logs.pop(session_id, None)
            if dropped is not None:
                dropped.close()
            return trashed

        trashed = await offload(delete)
        if trashed is None:
            return False
        _NOTIFIER.notify(events_key)
        await offload(shutil.rmtree, trashed, True)
        return True

    # events

    async def append(
        self, session_id: str, drafts: Sequence[EventDraft], *, lease_holder: str | None = None
    ) -> list[Event]:
        files = self._files(session_id)
        log = self._log(session_id)

        def append(cheap_only: bool) -> list[Event]:
            if lease_holder is not None:
                # Under the session lock, which every lease change takes too.
                lease = self._read_lease(files.lease)
                if lease is None or lease.holder != lease_holder:
                    if not files.exists():
                        raise SessionNotFound(session_id)
                    raise LeaseLost(session_id)
            try:
                # No `stat` of `session.json` first: `events.ndjson` is made before it and
                # removed with it (the folder is moved away whole), so its absence says.
                return log.append(drafts, fsync=self._fsync, cheap_only=cheap_only)
            except FileNotFoundError:
                raise SessionNotFound(session_id) from None

        # Here on the event loop when the lock is free and little is new in the file (the
        # usual case: this process wrote the rest); else in a worker thread.
        recorded = await self._locked(
            session_id,
            lambda: append(True),
            inline=not self._fsync,
            offloaded=lambda: append(False),
        )
        if recorded:
            _NOTIFIER.notify(files.events)
        return recorded

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        validate_session_id(session_id)
        found = self._read_here(session_id, start, limit)
        if found is None:
            found = await offload(self._read_sync, session_id, start, limit)
        return found or []

    def _read_here(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        """Serve a read on the calling thread when that is cheap: nothing new since the view
        was filled, or a small catch-up under a free lock. None: call `_read_sync`."""
        found = self._read_cached(session_id, start, limit)
        if found is not None or not self._exists(session_id):
            return found
        log = self._log(session_id)
        if self._fsync or not log.cheap_to_append():
            return None
        try:
            release = try_exclusive(self._files(session_id).lock)
        except FileNotFoundError:  # deleted meanwhile, folder, lock file and all
            return None
        if release is None:
            return None
        try:
            return log.read_locked(start, limit)
        finally:
            release()

    def _read_cached(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        # Nothing new since the view was last read: one `stat` and a slice, no thread.
        # None sends the caller to `_read_sync` (which also tells a missing session). No
        # look at `session.json`: a view up to date with `events.ndjson` proves the session
        # is there, as that file goes (with the whole folder) when the session does.
        log = self._logs.get(session_id)  # not `_log`: unknown ids make no view
        if log is None:
            return None
        with self._logs_guard:
            if session_id in self._logs:
                self._logs.move_to_end(session_id)  # recently used, as `_log` marks it
        return log.read_cached(start, limit)

    def _exists(self, session_id: str) -> bool:
        return self._files(session_id).exists()

    def _read_sync(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        if not self._exists(session_id):
            return None
        return self._log(session_id).read(start, limit)

    async def follow(self, session_id: str, start: int, timeout: float) -> list[Event]:
        key = str(self.events_path(session_id))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        gap = self._poll
        while True:
            with _NOTIFIER.register(key) as waiter:
                found = self._read_here(session_id, start, None)
                if found is None:
                    found = await offload(self._read_sync, session_id, start, None)
                remaining = deadline - loop.time()
                if found is None:
                    return []
                if found or remaining <= 0:
                    return found
                # Woken at once by appends in this process; other processes' appends are
                # picked up by the read at the top of the next round, checked ever less often
                # while the session stays quiet.
                await waiter.wait(min(remaining, gap))
                gap = min(gap * 2, self._max_poll)

    async def next_index(self, session_id: str) -> int:
        files = self._files(session_id)

        def count() -> int:
            if not files.exists():
                raise SessionNotFound(session_id)
            size = self._log(session_id).size()
            if size is None:
                raise SessionNotFound(session_id)
            return size

        cached = self._log(session_id).size_cached() if self._exists(session_id) else None
        return cached if cached is not None else await offload(count)

    # turn lease and interrupts

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=True)

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=False)

    async def _lease_op(self, session_id: str, holder: str, ttl: float, *, take_free: bool) -> bool:
        files = self._files(session_id)

        def op() -> bool:
            if not files.exists():
                raise SessionNotFound(session_id)
            now = self._clock()
            lease = self._read_lease(files.lease)
            live = lease is not None and lease.expires_at > now
            mine = live and lease is not None and lease.holder == holder
            if not mine and (live or not take_free):
                return False
            pid = os.getpid()
            data = _JSON.encode({"holder": holder, "expiresAt": now + ttl, "pid": pid})
            write_in_place(files.lease, data, _LEASE_WIDTH)
            # The turn's appends read these bytes back next: known, so never parsed.
            _remember_lease(data, Lease(holder=holder, expires_at=now + ttl, pid=pid))
            return True

        return await self._locked(session_id, op)

    async def release_lease(self, session_id: str, holder: str) -> None:
        path = self._files(session_id).lease

        def release() -> None:
            lease = self._read_lease(path)
            if lease is not None and lease.holder == holder:
                write_in_place(path, b"", _LEASE_WIDTH)

        await self._locked(session_id, release)

    async def get_lease(self, session_id: str) -> Lease | None:
        files = self._files(session_id)

        def read() -> Lease | None:
            # A lock file outlives its session (and the lease written in it).
            return self._read_lease(files.lease) if files.exists() else None

        lease = await self._locked(session_id, read)
        return lease if lease is not None and lease.expires_at > self._clock() else None

    @staticmethod
    def _read_lease(path: str) -> Lease | None:
        # Rewritten in place under the session lock (creating a file costs far more), so
        # it is read under the lock too. Leases are never flushed to disk: an empty or
        # damaged file (a power cut) is a free lease, which only frees it early.
        data = read_small(path) or b""
        # Every append of a turn reads the same bytes: they are parsed once.
        known = _LEASES.get(data)  # one lookup: another thread may clear the table
        if known is not None:
            return known[0]
        lease = _parse_lease(data)
        _remember_lease(data, lease)
        return lease

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        files = self._files(session_id)

        def flag() -> None:
            if not files.exists():
                raise SessionNotFound(session_id)
            if requested:
                write_in_place(files.interrupt, b"", _LEASE_WIDTH)  # blank: any turn
            else:
                unlink(files.interrupt)

        if not requested and files.exists() and not files.interrupted():
            return  # already clear: every accepted message asks this, so skip the lock
        await self._locked(session_id, flag)

    async def request_interrupt(
        self, session_id: str, turn_id: str, *, token_hash: str | None = None
    ) -> bool:
        files = self._files(session_id)

        def flag() -> bool:
            raw = self._records.read(files.folder)
            if raw is None:
                raise SessionNotFound(session_id)
            if token_hash is not None and raw.get("tokenHash") != token_hash:
                return False
            write_in_place(files.interrupt, turn_id.encode(), _LEASE_WIDTH)
            return True

        # Under the session lock, which token rotations take too: one conditional write.
        return await self._locked(session_id, flag)

    async def interrupt_requested(self, session_id: str, turn_id: str | None = None) -> bool:
        files = self._files(session_id)
        if not files.interrupted():  # one `stat`: the common case
            return False
        try:
            named = (read_small(files.interrupt) or b"").decode()
        except (OSError, UnicodeDecodeError):
            return False
        # An empty file (`set_interrupt`) stops any turn; a turn id, that turn only.
        return not named or named == turn_id

    async def close(self) -> None:
        with self._logs_guard:
            logs = list(self._logs.values())
            self._logs.clear()
        for log in logs:
            log.close()

    # internals

    def _move_to_trash(self, folder: str) -> Path | None:
        # One rename makes the session vanish whole; removing its files can follow.
        trashed = self._trash / f"{os.path.basename(folder)}.{secrets.token_hex(4)}"
        for _ in range(3):
            self._trash.mkdir(exist_ok=True)
            try:
                os.rename(folder, trashed)
                return trashed
            except FileNotFoundError:
                if not os.path.exists(folder):
                    return None  # removed by hand meanwhile
                # Another store's start-up emptied the trash between mkdir and rename.
        raise StoreError(f"could not delete session {os.path.basename(folder)}")

    @contextlib.contextmanager
    def _lock(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock; when its folder is gone (and the lock file with it),
        go on without it: whatever runs then finds the session missing."""
        with contextlib.ExitStack() as held:
            with contextlib.suppress(FileNotFoundError):
                held.enter_context(exclusive(self._files(session_id).lock))
            yield

    async def _locked(
        self,
        session_id: str,
        fn: Callable[[], T],
        *,
        inline: bool = True,
        offloaded: Callable[[], T] | None = None,
    ) -> T:
        """Run `fn` holding the session's lock: right here when the lock is free and `fn`
        is small (`inline`), else in a worker thread that may wait for the lock. There,
        `offloaded` runs instead when given; so it does when `fn`, run here, finds its work
        too large for the event loop (`CatchUpTooLarge`, raised before it changed anything)."""
        path = self._files(session_id).lock
        if inline:
            try:
                release = try_exclusive(path)
            except FileNotFoundError:
                return fn()  # the folder is gone with its lock file: `fn` finds no session
            if release is not None:
                try:
                    return fn()
                except CatchUpTooLarge:
                    pass
                finally:
                    release()
        work = fn if offloaded is None else offloaded

        def locked() -> T:
            with self._lock(session_id):
                return work()

        return await offload(locked)

    def _log(self, session_id: str) -> EventLog:
        dropped: list[EventLog] = []
        with self._logs_guard:
            found = self._logs.get(session_id)
            if found is None:
                files = self._files(session_id)
                found = EventLog(files.events, session_id, files.lock)
                self._logs[session_id] = found
                dropped = self._evict()
            else:
                self._logs.move_to_end(session_id)
        for log in dropped:  # outside the guard: a close waits for the view's own mutex
            log.close()
        return found

    def _evict(self) -> list[EventLog]:
        # Bounded by count and by bytes parsed, so a few huge sessions cannot hog memory.
        # Views grow after they are made, so the byte bound is approximate anyway: summing
        # every view on each new session cost more than the rest of a turn's bookkeeping.
        # (The count bound alone needs no sum: a full cache evicts on every new session.)
        evicted: list[EventLog] = []
        while len(self._logs) > self._cache_size:
            evicted.append(self._logs.popitem(last=False)[1])
        self._since_sum += 1
        if self._since_sum < _SUM_EVERY:
            return evicted
        self._since_sum = 0
        total = sum(log.cached_bytes for log in self._logs.values())
        while len(self._logs) > 1 and total > self._cache_bytes:
            _, dropped = self._logs.popitem(last=False)
            total -= dropped.cached_bytes
            evicted.append(dropped)
        return evicted
