"""The event streams of the file store: appends, reads and follows of `events.ndjson`.

Each session's parsed view (`EventLog`) is kept in a bounded cache (`ViewCache`), most
recently used last; sessions pinned by their followers (`pin_session`) stay in it. Reads
that are cheap run on the calling thread; the rest in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from agentkit.errors import LeaseLost, SessionNotFound
from agentkit.events import Event, EventDraft
from agentkit.store._eventlog import EventLog
from agentkit.store._fileblobs import FileBlobs
from agentkit.store._filepaths import PathCache, SessionLocking
from agentkit.store._filewatch import SessionsWatch
from agentkit.store._fs import try_exclusive
from agentkit.store._notify import Notifier
from agentkit.store._offload import offload
from agentkit.store._viewcache import ViewCache
from agentkit.store.base import Lease
from agentkit.store.ids import validate_session_id
from agentkit.store.large_events import offload_large, restore, with_full_data

T = TypeVar("T")

# A follower's own check for appends while the file watch runs: only a safety net.
WATCHED_POLL = 60.0

# Shared by every FileStore of the process, keyed by file path, so an append through one
# instance wakes followers of another instance on the same folder.
NOTIFIER = Notifier()


class FileEvents(SessionLocking):
    """The event-stream methods of `FileStore` (a mixin: it sets the attributes)."""

    _files: PathCache
    _fsync: bool
    _poll: float
    _max_poll: float
    _watch_appends: bool
    _watch: SessionsWatch | None
    _sessions: Path
    _views: ViewCache
    _caches: bool
    blobs: FileBlobs

    if TYPE_CHECKING:

        def _read_lease(self, path: str) -> Lease | None: ...

        def events_path(self, session_id: str) -> Path: ...

    async def append(
        self, session_id: str, drafts: Sequence[EventDraft], *, lease_holder: str | None = None
    ) -> list[Event]:
        files = self._files(session_id)
        log = self._log(session_id)
        # Large payloads are written to their blobs first: an event never names a blob that
        # is not whole yet.
        stored = await offload_large(drafts, self.blobs)

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
                return log.append(stored, fsync=self._fsync, cheap_only=cheap_only)
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
            NOTIFIER.notify(files.events)
        return with_full_data(recorded, drafts, stored)

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        validate_session_id(session_id)
        found = self._read_here(session_id, start, limit)
        if found is None:
            found = await offload(self._read_sync, session_id, start, limit)
        return await restore(found or [], self.blobs)

    def _read_here(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        """Serve a read on the calling thread when that is cheap: nothing new since the view
        was filled, or a small catch-up under a free lock. None: call `_read_sync`."""
        if not self._caches:
            return None
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
        log = self._views.peek(session_id)  # not `_log`: unknown ids make no view
        return None if log is None else log.read_cached(start, limit)

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
        # The back-off goes on from where the session's last follow left it while the
        # session stays quiet: a tail follows in rounds of a few seconds, and starting each
        # round at `poll_interval` again checked a thousand quiet sessions ~500 times a second.
        view = self._views.peek(session_id)
        gap = view.follow_gap if view is not None and view.follow_gap else self._poll
        while True:
            with NOTIFIER.register(key) as waiter:
                found = self._read_here(session_id, start, None)
                if found is None:
                    found = await offload(self._read_sync, session_id, start, None)
                remaining = deadline - loop.time()
                if found is None:
                    return []
                if found or remaining <= 0:
                    view = self._views.peek(session_id)
                    if view is not None:
                        view.follow_gap = None if found else gap
                    return await restore(found, self.blobs)
                # Woken at once by appends in this process; other processes' appends are
                # picked up by the read at the top of the next round, checked ever less often
                # while the session stays quiet.
                await waiter.wait(min(remaining, gap))
                gap = min(gap * 2, self._follow_cap())

    def _follow_cap(self) -> float:
        """The longest a follower waits before it checks the file itself: while the kernel
        tells of appends by other processes (`_filewatch`), only a rare safety net."""
        if self._watch_appends and self._watch is None:
            self._watch = SessionsWatch(self._sessions, NOTIFIER.notify, NOTIFIER.notify_all)
        if self._watch is not None and self._watch.live:
            return max(self._max_poll, WATCHED_POLL)
        return self._max_poll

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

    def pin_session(self, session_id: str) -> None:
        """Keep `session_id`'s parsed events cached until it is unpinned (as often as it
        was pinned): the engine's stream tails pin the sessions they follow, so however many
        are followed they never evict each other (`PinsSessions` in `store/base.py`)."""
        self._views.pin(validate_session_id(session_id))

    def unpin_session(self, session_id: str) -> None:
        """Undo one `pin_session`."""
        for log in self._views.unpin(session_id):
            log.close()

    def _log(self, session_id: str) -> EventLog:
        def make() -> EventLog:
            files = self._files(session_id)
            return EventLog(files.events, session_id, files.lock, cached=self._caches)

        found, dropped = self._views.get(session_id, make)
        for log in dropped:  # outside the cache's lock: a close waits for the view's mutex
            log.close()
        return found
