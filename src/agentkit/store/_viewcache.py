"""The file store's cache of parsed session views (`EventLog`), and the sessions pinned in it.

Views are kept least recently used first and bounded by count (`size`) and, checked every
few new views, by the bytes they have parsed. A pinned session (one a live stream tail
follows: `pin` / `unpin`, counted) is never evicted and does not count toward either
bound, so a thousand followed sessions do not push each other, or every other session, out
of a cache of 256: each follower's wake-up would otherwise parse its file again and evict
another (`bench/bench_streams.py` measured that thrash). Pinned views are bounded by the
number of live tails, which is the server's to bound.

One owner for the state: every look, insertion, pin and eviction goes through here, under
one lock. Evicted views are returned, for the caller to close outside the lock (a close
waits for the view's own mutex).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from agentkit.store._eventlog import EventLog

_SUM_EVERY = 32  # new views between two checks of the byte bound


class ViewCache:
    """Parsed views by session id: pinned ones kept, the others bounded and LRU-evicted."""

    def __init__(self, size: int, max_bytes: int) -> None:
        self.size = max(1, size)
        self.max_bytes = max_bytes
        self._guard = threading.Lock()
        self._lru: OrderedDict[str, EventLog] = OrderedDict()  # unpinned, oldest first
        self._pinned: dict[str, EventLog] = {}  # views of pinned sessions
        self._pins: dict[str, int] = {}  # pin counts (a pin may come before its view)
        self._since_sum = 0

    def peek(self, session_id: str) -> EventLog | None:
        """The cached view of `session_id` (marked recently used), or None: makes none."""
        with self._guard:
            found = self._pinned.get(session_id)
            if found is None:
                found = self._lru.get(session_id)
                if found is not None:
                    self._lru.move_to_end(session_id)
            return found

    def get(self, session_id: str, make: Callable[[], EventLog]) -> tuple[EventLog, list[EventLog]]:
        """The view of `session_id`, made with `make` when missing, and the views evicted
        to make room (close them)."""
        with self._guard:
            found = self._pinned.get(session_id)
            if found is not None:
                return found, []
            found = self._lru.get(session_id)
            if found is not None:
                self._lru.move_to_end(session_id)
                return found, []
            found = make()
            if session_id in self._pins:
                self._pinned[session_id] = found
                return found, []
            self._lru[session_id] = found
            return found, self._evict()

    def pop(self, session_id: str) -> EventLog | None:
        """Forget the view of `session_id` (its pins stay: they are its tails' to undo)."""
        with self._guard:
            found = self._pinned.pop(session_id, None)
            return self._lru.pop(session_id, None) if found is None else found

    def clear(self) -> list[EventLog]:
        """Forget every view (pins stay) and return them, to close."""
        with self._guard:
            views = [*self._pinned.values(), *self._lru.values()]
            self._pinned.clear()
            self._lru.clear()
            return views

    def pin(self, session_id: str) -> None:
        """Keep `session_id`'s view cached until as many `unpin`s as `pin`s."""
        with self._guard:
            self._pins[session_id] = self._pins.get(session_id, 0) + 1
            found = self._lru.pop(session_id, None)
            if found is not None:
                self._pinned[session_id] = found

    def unpin(self, session_id: str) -> list[EventLog]:
        """Undo one `pin`; the last one puts the view back among the evictable (as the most
        recently used) and returns the views evicted to make room (close them)."""
        with self._guard:
            count = self._pins.get(session_id, 0) - 1
            if count > 0:
                self._pins[session_id] = count
                return []
            self._pins.pop(session_id, None)
            found = self._pinned.pop(session_id, None)
            if found is None:
                return []
            self._lru[session_id] = found
            return self._evict()

    def pinned(self, session_id: str) -> bool:
        with self._guard:
            return session_id in self._pins

    def __contains__(self, session_id: object) -> bool:
        with self._guard:
            return session_id in self._pinned or session_id in self._lru

    def __len__(self) -> int:
        with self._guard:
            return len(self._pinned) + len(self._lru)

    def _evict(self) -> list[EventLog]:
        # Bounded by count and by bytes parsed, so a few huge sessions cannot hog memory.
        # Views grow after they are made, so the byte bound is approximate anyway: summing
        # every view on each new session cost more than the rest of a turn's bookkeeping.
        # (The count bound alone needs no sum: a full cache evicts on every new session.)
        evicted: list[EventLog] = []
        while len(self._lru) > self.size:
            evicted.append(self._lru.popitem(last=False)[1])
        self._since_sum += 1
        if self._since_sum < _SUM_EVERY:
            return evicted
        self._since_sum = 0
        total = sum(log.cached_bytes for log in self._lru.values())
        while len(self._lru) > 1 and total > self.max_bytes:
            _, dropped = self._lru.popitem(last=False)
            total -= dropped.cached_bytes
            evicted.append(dropped)
        return evicted
