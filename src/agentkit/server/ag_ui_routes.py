"""`POST /v1/ag-ui`: the agent as an AG-UI agent (server-sent events).

An AG-UI `threadId` is a session of the `ag-ui` channel, keyed by that id and owned by the
caller who first used it; a `runId` is a turn. A run with a user message as its last
message starts a turn (the session on first use); a run with `resume` entries decides the
approvals the previous run's `interrupt` outcome asked for and follows the parked turn on;
a request with `Last-Event-ID` replays the run it names from our event index and runs
nothing. Errors are AG-UI `RUN_ERROR` events, sent with the HTTP status of the error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agentkit.engine.keyed_sends import KeyedSends
from agentkit.engine.service import AgentService, Decision
from agentkit.errors import BadRequest, HttpError, NotFound
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.protocol_stream import (
    send_to_thread,
    sse_error_responses,
    thread_key,
    translated,
    turn_start,
)
from agentkit.server.routing import DeferredRouter
from agentkit.server.session_routes import Caller
from agentkit.sessions import Principal

# The AG-UI types load on the first AG-UI request (about half a second of imports), not
# when the app is built: a Lambda cold start that serves only the session API never pays.
if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

    from agentkit.protocols.ag_ui import AgUiRun

CHANNEL = "ag-ui"
SSE = "text/event-stream"
MAX_ID = 200
# Read by the handler itself (AG-UI's own type validates it); declared for the document.
RUN_AGENT_INPUT_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "description": "An AG-UI `RunAgentInput` (threadId, runId, messages, resume).",
                "required": ["threadId", "runId", "messages"],
            }
        }
    },
}


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where a run's stream starts: the turn, the index it is fed from, the last one sent."""

    session_id: str
    turn_id: str
    start: int
    quiet_through: int = -1
    # A run that answers interrupts first restates the conversation the client sent (a
    # `MESSAGES_SNAPSHOT`): the results it streams answer tool calls of an earlier run.
    restate: bool = False


def ag_ui_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    sends = KeyedSends(service)
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: AG-UI"])

    @router.post(
        "/v1/ag-ui",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "AG-UI events",
                "content": {SSE: {"schema": {"description": "Server-sent events"}}},
            },
            **sse_error_responses("one AG-UI `RUN_ERROR` event"),
        },
        openapi_extra={"requestBody": RUN_AGENT_INPUT_BODY},
    )
    async def ag_ui(request: Request, caller: Caller) -> Response:
        """Run the agent for an AG-UI `RunAgentInput`; the run streams as AG-UI events."""
        from ag_ui.core import RunErrorEvent

        from agentkit.protocols.ag_ui import AgUiRun, sse

        try:
            run = _parse(await request.body())
            plan = await _plan(sends, run, caller, request.headers.get("last-event-id"))
        except HttpError as exc:
            body = sse(RunErrorEvent(message=exc.message or exc.code, code=exc.code))
            return Response(body, status_code=exc.status, media_type=SSE, headers=exc.headers)
        translator = AgUiRun(
            run.thread_id,
            run.run_id,
            plan.session_id,
            plan.turn_id,
            quiet_through=plan.quiet_through,
        )
        stream = _stream(request, service, options, caller, plan, translator, run)
        return StreamingResponse(
            stream, media_type=SSE, headers={"cache-control": "no-store", "x-accel-buffering": "no"}
        )

    return router


def _parse(body: bytes) -> RunAgentInput:
    from ag_ui.core import RunAgentInput

    try:
        run = RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadRequest(
            f"not an AG-UI RunAgentInput: {where}: {first['msg']}",
            code="invalid_input",
        ) from None
    if not run.thread_id or len(run.thread_id) > MAX_ID or len(run.run_id) > MAX_ID:
        raise BadRequest(f"threadId and runId must be 1-{MAX_ID} characters", code="invalid_input")
    thread_key(run.thread_id, "threadId")
    return run


async def _plan(
    sends: KeyedSends, run: RunAgentInput, caller: Principal, last_event_id: str | None
) -> _Plan:
    if last_event_id:
        return await _replay(sends.service, run, caller, last_event_id)
    if run.resume:
        return await _resume(sends.service, run, caller)
    message = _last_user_text(run)
    session_id, turn_id, start = await send_to_thread(
        sends, CHANNEL, run.thread_id, message, principal=caller
    )
    return _Plan(session_id, turn_id, start)


async def _thread_session(
    service: AgentService, session_id: str, run: RunAgentInput, caller: Principal
) -> None:
    """The session must be this thread's, and the caller's (403 otherwise)."""
    try:
        record = await service.get_session(session_id, principal=caller)
    except NotFound:
        raise BadRequest("this id names no run of this thread", code="invalid_input") from None
    if record.channel_id != CHANNEL or record.continuation_key != run.thread_id:
        raise BadRequest("this id names no run of this thread", code="invalid_input")


async def _resume(service: AgentService, run: RunAgentInput, caller: Principal) -> _Plan:
    """Decide the interrupts the resume entries answer, then follow the turn on."""
    from agentkit.protocols.ag_ui import split_interrupt_id

    targets = [split_interrupt_id(entry.interrupt_id) for entry in run.resume or []]
    sessions = {t[0] for t in targets if t is not None}
    if None in targets or len(sessions) != 1:
        raise BadRequest(
            "resume entries must answer this thread's interrupts", code="invalid_input"
        )
    session_id = sessions.pop()
    await _thread_session(service, session_id, run, caller)
    pending = {p.call_id: p for p in await service.approvals(session_id, principal=caller)}
    events = await service.read_events(session_id, principal=caller)
    decisions: list[tuple[str, Decision]] = []
    for entry, target in zip(run.resume or [], targets, strict=True):
        assert target is not None
        if target[1] not in pending:
            raise BadRequest(f"no pending approval {target[1]!r}", code="invalid_input")
        decisions.append((target[1], _decision(entry.status, entry.payload)))
    turn_id = pending[decisions[0][0]].turn_id
    if turn_id is None:
        raise BadRequest("this approval belongs to no turn", code="invalid_input")
    quiet = events[-1].index if events else -1
    for call_id, decision in decisions:
        await service.resolve_approval(session_id, call_id, decision, principal=caller)
    return _Plan(session_id, turn_id, turn_start(events, turn_id), quiet, restate=True)


def _decision(status: str, payload: Any) -> Decision:
    if status == "cancelled":
        return "deny"
    value = payload.get("decision") if isinstance(payload, dict) else payload
    if value in ("approve", "deny"):
        return "approve" if value == "approve" else "deny"
    raise BadRequest(
        'a resolved approval needs payload {"decision": "approve"|"deny"}', code="invalid_input"
    )


async def _replay(service: AgentService, run: RunAgentInput, caller: Principal, last: str) -> _Plan:
    """A dropped stream again, from after the last event id the client saw; nothing runs."""
    session_id, _, index = last.partition("/")
    if not index.isdigit():
        raise BadRequest("Last-Event-ID is not one of this endpoint's ids", code="invalid_input")
    await _thread_session(service, session_id, run, caller)
    events = await service.read_events(session_id, principal=caller)
    seen = int(index)
    turns = [e for e in events if e.index <= seen and e.turn_id is not None]
    if not turns:
        raise BadRequest("Last-Event-ID names no turn of this thread", code="invalid_input")
    turn_id = turns[-1].turn_id
    assert turn_id is not None
    return _Plan(session_id, turn_id, turn_start(events, turn_id), seen)


def _last_user_text(run: RunAgentInput) -> str:
    last = run.messages[-1] if run.messages else None
    if last is None or last.role != "user":
        raise BadRequest("a run needs a user message last, or resume entries", code="invalid_input")
    content = last.content
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(
            str(getattr(p, "text", "")) for p in content if getattr(p, "type", "") == "text"
        )
    if not text.strip():
        raise BadRequest("the user message has no text", code="invalid_input")
    return text


async def _stream(
    request: Request,
    service: AgentService,
    options: ServerOptions,
    caller: Principal,
    plan: _Plan,
    translator: AgUiRun,
    run: RunAgentInput,
) -> AsyncIterator[bytes]:
    from ag_ui.core import MessagesSnapshotEvent

    from agentkit.protocols.ag_ui import sse

    yield sse(translator.start())
    if plan.restate:
        yield sse(MessagesSnapshotEvent(messages=run.messages))
    sid = plan.session_id
    out = translated(request, service, options, sid, translator, principal=caller, start=plan.start)
    async with aclosing(out):
        async for event, events in out:
            event_id = f"{sid}/{event.index}"
            yield b"".join(sse(e, event_id) for e in events)
    # A run that ended sent its RUN_FINISHED or RUN_ERROR above. One the window (or a
    # stopping server) cut short sends nothing more, so it does not look finished, and
    # the client resumes with Last-Event-ID.
