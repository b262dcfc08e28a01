"""NDJSON streaming of a session's events: replay from `startIndex`, then follow live.

Each stream is a follower of its session's shared tail (`engine.tails`: one reader of
the store per followed session, woken by appends), which gives it the events from its own
next index, so it never emits an index twice or skips one, and a client resumes by passing
the last index it saw plus one. It ends when the client leaves (Starlette cancels the
generator), when the optional window runs out (Lambda), when the server shuts down, after
a task session's final event (nothing can follow it), or, with `once` (a host that
buffers each response until it ends, as Lambda does), after the first events it sends.
"""

from __future__ import annotations

import asyncio
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
    poll: float | None = None,
    shutdown: asyncio.Event,
    once: bool = False,
) -> AsyncIterator[bytes]:
    """`poll`: unused (kept for callers); the follower waits on its session's shared tail,
    which appends wake, with no timer of its own but the window's."""
    loop = asyncio.get_running_loop()
    deadline = None if window is None else loop.time() + window
    try:
        sub = await service.subscribe_events(session_id, principal=principal, start=start)
    except AgentkitError:
        return  # deleted between the route's check and here
    # A server shutdown ends the stream: it wakes the follower's wait.
    watcher = asyncio.ensure_future(shutdown.wait())
    watcher.add_done_callback(lambda _: sub.interrupt())
    try:
        while not shutdown.is_set():
            wait = None if deadline is None else deadline - loop.time()
            if wait is not None and wait <= 0:
                return
            batch = await sub.next(wait)
            if batch is None:
                return  # the session is gone
            if batch.events:
                yield batch.data
                if once or any(e.type in _FINAL for e in batch.events):
                    return
    finally:
        sub.close()
        watcher.cancel()
