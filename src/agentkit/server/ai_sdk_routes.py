"""`POST /v1/ai-sdk/chat` and its resume `GET`: the agent behind the AI SDK's `useChat`
(UI message stream v1).

The request is the body `DefaultChatTransport` sends: `{id, messages, trigger, ...}`. The
chat `id` is a session of the `ai-sdk` channel, keyed by that id and owned by the caller
who first used it. When the last message is the user's, its text parts start a turn; when
it is the assistant's with tool parts in the `approval-responded` state, those are the
decisions for the calls the previous response asked approval for, and the parked turn
streams on. Errors are the stream's `error` part, sent with the HTTP status of the error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agentkit.engine.keyed_sends import KeyedSends
from agentkit.engine.service import AgentService, Decision
from agentkit.errors import BadRequest, HttpError, NotFound
from agentkit.protocols.ai_sdk import HEADERS, UiMessageRun, sse
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
from agentkit.sessions import Principal, SessionStatus, fold_status

CHANNEL = "ai-sdk"
SSE = "text/event-stream"
MAX_ID = 200
CHAT_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "description": "The body the AI SDK's chat transport sends (`id`, `messages`).",
                "required": ["id", "messages"],
            }
        }
    },
}


def ai_sdk_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    sends = KeyedSends(service)
    router = DeferredRouter(
        prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: AI SDK chat"]
    )

    @router.post(
        "/v1/ai-sdk/chat",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "UI message stream parts",
                "content": {SSE: {"schema": {"description": "Server-sent events"}}},
            },
            **sse_error_responses("an `error` part"),
        },
        openapi_extra={"requestBody": CHAT_BODY},
    )
    async def chat(request: Request, caller: Caller) -> Response:
        """Answer a chat request with one assistant message, as UI message stream parts."""
        try:
            chat_id, messages = _parse(await request.body())
            translator, start = await _plan(sends, chat_id, messages, caller)
        except HttpError as exc:
            return _refusal(exc)
        stream = _stream(request, service, options, caller, translator, start)
        return StreamingResponse(stream, media_type=SSE, headers=HEADERS)

    @router.get(
        "/v1/ai-sdk/chat/{chat_id}/stream",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "The response in flight, replayed from its start",
                "content": {SSE: {"schema": {"description": "Server-sent events"}}},
            },
            204: {"description": "No response of this chat is in flight"},
            **sse_error_responses("an `error` part"),
        },
    )
    async def resume(request: Request, chat_id: str, caller: Caller) -> Response:
        """The chat's response still in flight, from its start, for `useChat`'s `resume`
        (the transport's `reconnectToStream`); 204 when no turn of the chat is running.
        Nothing runs again: the parts are read back from the session's events."""
        try:
            found = await _in_flight(service, _chat_id(chat_id), caller)
        except HttpError as exc:
            return _refusal(exc)
        if found is None:
            return Response(status_code=204, headers=HEADERS)
        translator, start = found
        stream = _stream(request, service, options, caller, translator, start)
        return StreamingResponse(stream, media_type=SSE, headers=HEADERS)

    return router


def _refusal(exc: HttpError) -> Response:
    """A refused request: the stream's `error` part, sent with the error's HTTP status."""
    body = sse({"type": "error", "errorText": exc.message or exc.code}) + sse("[DONE]")
    return Response(
        body, status_code=exc.status, media_type=SSE, headers={**HEADERS, **exc.headers}
    )


def _chat_id(value: object) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID:
        raise BadRequest(f"id must be a chat id of 1-{MAX_ID} characters", code="invalid_input")
    return thread_key(value, "id")


async def _in_flight(
    service: AgentService, chat_id: str, caller: Principal
) -> tuple[UiMessageRun, int] | None:
    """The translator and start index of the chat's running turn, or None."""
    record = await service.session_by_key(CHANNEL, chat_id, principal=caller)
    if record is None:
        return None
    events = await service.read_events(record.id, principal=caller)
    if fold_status(events) != SessionStatus.RUNNING:
        return None  # idle, or parked: the response that asked approval has ended
    turn_id = next((e.turn_id for e in reversed(events) if e.turn_id is not None), None)
    if turn_id is None:
        return None
    tail = events[-1].index
    return UiMessageRun(record.id, turn_id, carry_through=tail), turn_start(events, turn_id)


def _parse(body: bytes) -> tuple[str, list[dict[str, Any]]]:
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the body is not JSON", code="invalid_input") from None
    except RecursionError:
        # Valid JSON nested deeper than the parser's stack: a few kilobytes of brackets.
        raise BadRequest("the body nests too deeply", code="invalid_input") from None
    chat_id = _chat_id(raw.get("id") if isinstance(raw, dict) else None)
    messages = raw.get("messages") if isinstance(raw, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise BadRequest("messages must be a non-empty list of UI messages", code="invalid_input")
    return chat_id, messages


async def _plan(
    sends: KeyedSends, chat_id: str, messages: list[dict[str, Any]], caller: Principal
) -> tuple[UiMessageRun, int]:
    last = messages[-1]
    raw_parts = last.get("parts")
    if raw_parts is not None and not isinstance(raw_parts, list):
        raise BadRequest("the message's parts must be a list", code="invalid_input")
    parts = [p for p in raw_parts or [] if isinstance(p, dict)]
    if last.get("role") == "user":
        text = "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
        if not text.strip():
            raise BadRequest("the user message has no text part", code="invalid_input")
        session_id, turn_id, start = await send_to_thread(
            sends, CHANNEL, chat_id, text, principal=caller
        )
        return UiMessageRun(session_id, turn_id), start
    answers = [p for p in parts if p.get("state") == "approval-responded"]
    if last.get("role") != "assistant" or not answers:
        raise BadRequest(
            "the last message must be the user's, or answer tool approvals", code="invalid_input"
        )
    return await _resume(sends.service, chat_id, answers, caller)


async def _resume(
    service: AgentService, chat_id: str, answers: list[dict[str, Any]], caller: Principal
) -> tuple[UiMessageRun, int]:
    """Decide the approvals the client answered; the parked turn then streams on."""
    decisions: dict[str, tuple[str, Decision]] = {}
    for part in answers:
        approval = part.get("approval")
        if not isinstance(approval, dict):
            approval = {}
        session_id, _, call_id = str(approval.get("id", "")).partition("/")
        if not call_id or not isinstance(approval.get("approved"), bool):
            raise BadRequest("an approval answer needs its id and approved", code="invalid_input")
        decisions[call_id] = (session_id, "approve" if approval["approved"] else "deny")
    sessions = {sid for sid, _ in decisions.values()}
    if len(sessions) != 1:
        raise BadRequest("the approvals answered belong to no one chat", code="invalid_input")
    session_id = sessions.pop()
    try:
        record = await service.get_session(session_id, principal=caller)
    except NotFound:
        raise BadRequest("these approvals are not this chat's", code="invalid_input") from None
    if record.channel_id != CHANNEL or record.continuation_key != chat_id:
        raise BadRequest("these approvals are not this chat's", code="invalid_input")
    pending = {p.call_id: p for p in await service.approvals(session_id, principal=caller)}
    # An answer the server has already recorded (the client resends its history) is skipped.
    fresh = {cid: d for cid, d in decisions.items() if cid in pending}
    if not fresh:
        raise BadRequest("no pending approval among the answers", code="invalid_input")
    turn_id = pending[next(iter(fresh))].turn_id
    if turn_id is None:
        raise BadRequest("this approval belongs to no turn", code="invalid_input")
    events = await service.read_events(session_id, principal=caller)
    quiet = events[-1].index if events else -1
    for call_id, (_, decision) in fresh.items():
        await service.resolve_approval(session_id, call_id, decision, principal=caller)
    return UiMessageRun(session_id, turn_id, quiet_through=quiet), turn_start(events, turn_id)


async def _stream(
    request: Request,
    service: AgentService,
    options: ServerOptions,
    caller: Principal,
    translator: UiMessageRun,
    start: int,
) -> AsyncIterator[bytes]:
    yield sse(translator.start())
    sid = translator.session_id
    parts = translated(request, service, options, sid, translator, principal=caller, start=start)
    async with aclosing(parts):
        async for _, out in parts:
            yield b"".join(sse(p) for p in out)
    if translator.done:
        yield sse("[DONE]")
