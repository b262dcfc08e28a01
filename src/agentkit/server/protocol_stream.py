"""A session's events, replayed and followed, for the protocol adapters.

The same follow loop as our NDJSON stream (`server.streaming.follow_stream`: bounded waits,
the Lambda window, shutdown), decoded back into `Event`s for a translator to read.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Protocol, TypeVar

import msgspec
from starlette.requests import Request

from agentkit.engine.keyed_sends import KeyedSends
from agentkit.engine.on_busy import agent_on_busy
from agentkit.engine.service import AgentService
from agentkit.errors import BadRequest
from agentkit.events import Event, EventType
from agentkit.server.options import ServerOptions
from agentkit.server.state import server_state
from agentkit.server.streaming import follow_stream
from agentkit.sessions import Principal

_DECODER = msgspec.json.Decoder(Event)


def thread_key(value: str, name: str) -> str:
    """`value`, a client's name for its thread, if a store can key a session by it: text
    UTF-8 can carry (a lone surrogate is a valid JSON escape but none) and no control
    characters (which the DynamoDB store refuses), else a 400 naming `name`."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        message = f"{name} must be text (no lone surrogates)"
        raise BadRequest(message, code="invalid_input") from None
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise BadRequest(f"{name} must have no control characters", code="invalid_input")
    return value


def _event(line: bytes) -> Event:
    try:
        return _DECODER.decode(line)
    except msgspec.DecodeError:
        # msgspec refuses the escape of a lone surrogate, which `Event.to_line` writes for
        # text UTF-8 cannot carry; the standard library reads it back.
        return Event.from_json(line)


T = TypeVar("T")


class Translator(Protocol[T]):
    """A protocol's view of one turn: what each of our events becomes, and when it ends."""

    done: bool

    def feed(self, event: Event) -> list[T]: ...


async def session_events(
    request: Request,
    service: AgentService,
    options: ServerOptions,
    session_id: str,
    *,
    principal: Principal,
    start: int,
) -> AsyncIterator[Event]:
    """Events from `start`, live, until the client leaves or the server's window ends."""
    chunks = follow_stream(
        service,
        session_id,
        principal=principal,
        start=start,
        window=options.max_stream_window,
        poll=options.stream_poll,
        shutdown=server_state(request).shutdown,
        once=options.stream_until_first_events,
    )
    try:
        async for chunk in chunks:
            for line in chunk.splitlines():
                if line:
                    yield _event(line)
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]


async def translated(
    request: Request,
    service: AgentService,
    options: ServerOptions,
    session_id: str,
    translator: Translator[T],
    *,
    principal: Principal,
    start: int,
) -> AsyncGenerator[tuple[Event, list[T]], None]:
    """Each event from `start` the translator turns into something, with what it became,
    until the translator is done (or the client leaves, or the server's window ends)."""
    events = session_events(request, service, options, session_id, principal=principal, start=start)
    try:
        async for event in events:
            out = translator.feed(event)
            if out:
                yield event, out
            if translator.done:
                return
    finally:
        await events.aclose()  # type: ignore[attr-defined]


def turn_start(events: list[Event], turn_id: str) -> int:
    """The index of the turn's `message.received` (the end of the stream if none)."""
    for ev in events:
        if ev.turn_id == turn_id and ev.type == EventType.MESSAGE_RECEIVED:
            return ev.index
    return events[-1].index + 1 if events else 0


async def send_to_thread(
    sends: KeyedSends, channel_id: str, key: str, message: str, *, principal: Principal
) -> tuple[str, str, int]:
    """Send `message` into the session `key` names on `channel_id`, creating the session
    (owned by the caller) on the key's first use. Returns the session, the turn, and the
    index the turn's events start at. Another principal's key is `Forbidden`."""
    service = sends.service
    sent = await sends.send(
        channel_id,
        key,
        message,
        acting=principal,
        owner=principal,
        source="http",
        on_busy=agent_on_busy(service.manifest),
    )
    accepted = sent.accepted
    if sent.started:
        return accepted.session_id, accepted.turn_id, 0
    events = await service.read_events(accepted.session_id, principal=principal)
    return accepted.session_id, accepted.turn_id, turn_start(events, accepted.turn_id)


def sse_error_responses(shape: str) -> dict[int | str, dict[str, Any]]:
    """The refusals a protocol route answers in its own stream shape (for the document)."""
    content = {"text/event-stream": {"schema": {"description": "Server-sent events"}}}
    return {
        status: {"description": f"{text}, as {shape}", "content": content}
        for status, text in (
            (400, "Input that is not the protocol's"),
            (403, "Another principal's thread or session"),
            (404, "A session that is gone"),
            (409, "A busy session that takes no new message now"),
            (429, "The caller's daily budget is spent"),
        )
    }
