"""One shared tail per followed session: a single reader that every follower subscribes to.

A stream follower used to tail the store on its own: each one registered its own wake-up,
read the store again on every append and encoded the same events to NDJSON again. With a
thousand followers that was a thousand reads and encodings per append. Here each session
that has followers gets one reader task, which waits in `store.follow` (woken by the
store's in-process notification on append; the store's own slow check covers appends by
another process) and keeps the events it read, with their encoded lines, in a buffer.
Each follower (`Subscription`) takes from that buffer from its own next index.

Replay from an index is exact: a follower starting at `k` gets `k, k+1, ...` with no gap
and no duplicate. A follower whose index is below the buffer (it started before the tail
did, or fell behind) reads the store directly until it reaches the buffer; one above the
buffer waits for the reader to get there. Events leave the buffer only once every live
follower is past them (a tail's only follower keeps none it has taken: most followed
sessions have one stream, and its copy of each line was a good part of an idle stream's
memory in `bench/bench_streams.py`), and a tail stops (its reader cancelled) when its last follower
leaves, never before.

A store that caches a bounded number of sessions (`PinsSessions`: the file store keeps 256
sessions' parsed events) is told to keep each followed session for its tail's life: with
more followed sessions than that bound, each wake-up would otherwise parse its session's
file again and evict another's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agentkit.errors import AgentkitError
from agentkit.events import Event, contiguous
from agentkit.store.base import PinsSessions, Store

_TRIM_AT = 256  # events every follower is past before the buffer is cut down


@dataclass(frozen=True, slots=True)
class Batch:
    """Events for one follower, in order from its index, and their NDJSON lines."""

    events: list[Event]
    data: bytes


_EMPTY = Batch([], b"")


class SessionTails:
    """The live tails of one store's sessions (one per session and event loop).

    `wait`: how long one `store.follow` call of a reader waits before the reader checks
    that its session still exists (appends wake it at once; this bounds only how long a
    deletion by another process can go unnoticed)."""

    def __init__(self, store: Store, *, wait: float = 15.0) -> None:
        self.store = store
        self.wait = wait
        self.pins = store if isinstance(store, PinsSessions) else None
        self._tails: dict[tuple[str, asyncio.AbstractEventLoop], _Tail] = {}

    def subscribe(self, session_id: str, start: int) -> Subscription:
        """A follower of `session_id` from index `start` (on the running loop); close it."""
        loop = asyncio.get_running_loop()
        key = (session_id, loop)
        tail = self._tails.get(key)
        if tail is None:
            tail = _Tail(self, key, max(0, start))
            self._tails[key] = tail
        elif start < tail.base and tail.end == tail.base:
            tail.rebase(max(0, start))  # nothing read yet: read from the lower index
        sub = Subscription(tail, max(0, start))
        tail.subs.add(sub)
        return sub

    def active(self) -> int:
        """How many tails are live (each with one reader task)."""
        return len(self._tails)

    def followers(self, session_id: str) -> int:
        """How many followers `session_id` has on the running loop."""
        tail = self._tails.get((session_id, asyncio.get_running_loop()))
        return 0 if tail is None else len(tail.subs)

    def _drop(self, tail: _Tail) -> None:
        if self._tails.get(tail.key) is tail:
            del self._tails[tail.key]


class _Tail:
    """One session's reader and the events it read from `base` on."""

    def __init__(
        self, tails: SessionTails, key: tuple[str, asyncio.AbstractEventLoop], base: int
    ) -> None:
        self.tails = tails
        self.key = key
        self.session_id = key[0]
        self.base = base
        self.events: list[Event] = []
        self.lines: list[bytes] = []
        self.subs: set[Subscription] = set()
        self.gone = False  # the session was deleted (or may no longer be read)
        self.error: BaseException | None = None
        self._pinned = tails.pins is not None
        if tails.pins is not None:
            tails.pins.pin_session(self.session_id)
        self.task = self._start()

    @property
    def end(self) -> int:
        return self.base + len(self.events)

    def _start(self) -> asyncio.Task[None]:
        loop = self.key[1]
        return loop.create_task(self._read(), name=f"agentkit-tail:{self.session_id}")

    def rebase(self, base: int) -> None:
        """Read from a lower index instead (only while nothing has been read)."""
        self.task.cancel()
        self.base = base
        self.task = self._start()

    async def _read(self) -> None:
        store, sid = self.tails.store, self.session_id
        try:
            while True:
                found = await store.follow(sid, self.end, self.tails.wait)
                fresh = contiguous(found, self.end)
                if fresh:
                    self.events.extend(fresh)
                    self.lines.extend(e.to_line() for e in fresh)
                    self._publish()
                    continue
                # Nothing new: a timeout, or the session is gone.
                if await store.get_session(sid) is None:
                    self._finish(gone=True)
                    return
        except asyncio.CancelledError:
            raise
        except AgentkitError:
            self._finish(gone=True)
        except Exception as exc:  # a broken store: every follower's stream ends with it
            self.error = exc
            self._finish(gone=False)

    def _finish(self, *, gone: bool) -> None:
        self.gone = gone or self.gone
        self.tails._drop(self)  # the next follower starts a fresh tail
        self._unpin()
        self._publish()

    def _unpin(self) -> None:
        """Let the store evict the session again (once per tail, when it stops)."""
        if self._pinned and self.tails.pins is not None:
            self._pinned = False
            self.tails.pins.unpin_session(self.session_id)

    def _publish(self) -> None:
        lowest = self.end
        for sub in self.subs:
            sub.wake()
            lowest = min(lowest, sub.position)
        # Only what every live follower is past leaves the buffer.
        if lowest - self.base >= _TRIM_AT:
            cut = lowest - self.base
            del self.events[:cut]
            del self.lines[:cut]
            self.base = lowest

    def forget_all(self) -> None:
        """Drop the buffer (every follower is past it); a joiner below reads the store."""
        self.base = self.end
        self.events = []
        self.lines = []

    def leave(self, sub: Subscription) -> None:
        self.subs.discard(sub)
        if not self.subs:
            self.tails._drop(self)
            self.task.cancel()
            self._unpin()


class Subscription:
    """One follower of a shared tail: `next` gives its events from its own index on."""

    def __init__(self, tail: _Tail, start: int) -> None:
        self._tail = tail
        self.position = start  # the index of the next event this follower gets
        self._wake: asyncio.Future[None] | None = None
        self._interrupted = False
        self._closed = False

    @property
    def session_id(self) -> str:
        return self._tail.session_id

    def wake(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def interrupt(self) -> None:
        """Make a pending (or the next) `next` return an empty batch at once."""
        self._interrupted = True
        self.wake()

    async def next(self, timeout: float | None) -> Batch | None:
        """The follower's next events, waiting up to `timeout` seconds (None: no limit)
        for the first; an empty batch on timeout or `interrupt`, None once the session is
        gone (the stream should end)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            tail = self._tail
            if tail.error is not None:
                raise tail.error
            if self.position < tail.base:
                return await self._read_store()
            if self.position < tail.end:
                at = self.position - tail.base
                events, data = tail.events[at:], b"".join(tail.lines[at:])
                self.position = tail.end
                if len(tail.subs) == 1 and self in tail.subs:
                    tail.forget_all()  # its only follower has taken everything
                return Batch(events, data)
            if tail.gone or self._closed:
                return None
            if self._interrupted:
                self._interrupted = False
                return _EMPTY
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return _EMPTY
            self._wake = loop.create_future()
            try:
                if remaining is None:
                    await self._wake
                else:
                    await asyncio.wait_for(self._wake, remaining)
            except TimeoutError:
                return _EMPTY
            finally:
                self._wake = None

    async def _read_store(self) -> Batch | None:
        # Below the buffer: the events up to it exist (the stream has no gaps), so this
        # read always finds some, unless the session is gone.
        try:
            found = await self._tail.tails.store.read(self.session_id, self.position)
        except AgentkitError:
            return None
        fresh = contiguous(found, self.position)
        if not fresh:
            return None
        self.position = fresh[-1].index + 1
        return Batch(fresh, b"".join(e.to_line() for e in fresh))

    def close(self) -> None:
        """Leave the tail (its reader stops with its last follower)."""
        if not self._closed:
            self._closed = True
            self.wake()
            self._tail.leave(self)


__all__ = ["Batch", "SessionTails", "Subscription"]
