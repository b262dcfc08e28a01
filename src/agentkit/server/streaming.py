"""NDJSON streaming of a session's events: replay from `startIndex`, then follow live.

The loop asks the service for events at `next_index` with a bounded wait, so it never
emits an index twice or skips one, and a client resumes by passing the last index it saw
plus one. It ends when the client leaves (Starlette cancels the generator), when the
optional window runs out (Lambda), when the server shuts down, after a task session's
final event (nothing can follow it), or, with `once` (a host that buffers each response
until it ends, as Lambda does), after the first events it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from agentkit.engine.service import AgentService
from agentkit.errors import AgentkitError
from agentkit.events import Event, EventType
from agentkit.sessions import Principal

NDJSON = "application/x-ndjson"
_FINAL = frozenset({EventType.SESSION_COMPLETED.value, EventType.SESSION_FAILED.value})


def ndjson_lines(events: list[Event]) -> bytes:
    return b"".join(e.to_line() for e in events)


async def follow_stream(
    service: AgentService,
    session_id: str,
    *,
    principal: Principal,
    start: int,
    window: float | None,
    poll: float,
    shutdown: asyncio.Event,
    once: bool = False,
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    deadline = None if window is None else loop.time() + window
    next_index = start
    follower = _Follower(service, session_id, principal, shutdown)
    try:
        while not shutdown.is_set():
            wait = poll if deadline is None else min(poll, deadline - loop.time())
            if wait <= 0:
                return
            events = await follower.next(next_index, wait)
            if events is None:
                return
            fresh = [e for e in events if e.index >= next_index]
            if fresh:
                next_index = fresh[-1].index + 1
                yield ndjson_lines(fresh)
                if once or any(e.type in _FINAL for e in fresh):
                    return
    finally:
        await follower.close()


class _Follower:
    """Bounded waits for a session's next events that a server shutdown cuts short.

    Each wait runs as a task the stream awaits directly, and one watcher per stream cancels
    it on shutdown: an event is then one loop iteration from its append to the stream (the
    store wakes the wait), where racing the wait against the shutdown with `asyncio.wait`
    on every call cost two more, during which the turn that appended it runs on.
    """

    def __init__(
        self,
        service: AgentService,
        session_id: str,
        principal: Principal,
        shutdown: asyncio.Event,
    ) -> None:
        self.service = service
        self.session_id = session_id
        self.principal = principal
        self.shutdown = shutdown
        self.current: asyncio.Future[list[Event]] | None = None
        self.watcher = asyncio.ensure_future(shutdown.wait())
        self.watcher.add_done_callback(self._stop)

    def _stop(self, _: object) -> None:
        if self.current is not None:
            self.current.cancel()

    async def next(self, start: int, wait: float) -> list[Event] | None:
        """The next events, or None when the stream should end (shutdown, session gone)."""
        follow = asyncio.ensure_future(
            self.service.follow_events(
                self.session_id, principal=self.principal, start=start, timeout=wait
            )
        )
        self.current = follow
        try:
            return await follow
        except asyncio.CancelledError:
            current = asyncio.current_task()
            ours = current is None or not current.cancelling()  # not the client leaving
            if ours and follow.cancelled() and self.shutdown.is_set():
                return None  # the server is shutting down: end the response
            raise
        except AgentkitError:
            # The session was deleted or access changed mid-stream: end the response cleanly.
            return None
        finally:
            self.current = None
            if not follow.done():
                follow.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follow

    async def close(self) -> None:
        self.watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.watcher
