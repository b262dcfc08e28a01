"""`POST /v1/a2a`: the agent as an A2A agent (JSON-RPC 2.0, server-sent events to stream).

One method table serves the v1 names (`SendMessage`, `SendStreamingMessage`, `GetTask`,
`CancelTask`, `SubscribeToTask`) in the v1 JSON shapes and the v0.3 names (`message/send`,
`message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) in the v0.3 shapes.
An A2A `contextId` is a session of the `a2a` channel, keyed by that id and owned by the
caller who first used it (a message with no `contextId` starts a new one); a task is a
turn, its id `<sessionId>:<turnId>` (`protocols.a2a`). A turn parked on approvals is
`input-required`; a message in that task with the decision continues it. Cancelling a task
is the service's stop; subscribing to one streams it again from our events.

Errors are JSON-RPC error objects, sent with the HTTP status of the error (400 for input
that is not JSON-RPC or not the method's params, 404 for an unknown method or task, 403
for another principal's context, 409, 429 with `Retry-After`): never a 500.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agentkit.engine.keyed_sends import KeyedSends
from agentkit.engine.service import AgentService, Decision
from agentkit.errors import BadRequest, Conflict, HttpError, NotFound
from agentkit.protocols.a2a import (
    INPUT_REQUIRED,
    TERMINAL,
    A2aTask,
    Obj,
    split_task_id,
    sse,
    v03_event,
    v03_task,
)
from agentkit.server.a2a_card import RPC_PATH
from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.protocol_stream import send_to_thread, thread_key, translated, turn_start
from agentkit.server.routing import DeferredRouter
from agentkit.server.session_routes import Caller
from agentkit.sessions import Principal

CHANNEL = "a2a"
SSE = "text/event-stream"
MAX_ID = 200
# JSON-RPC's own codes, A2A's, and the implementation-defined one for the rest.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, SERVER_ERROR = -32001, -32002, -32000
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
REASONS = {
    PARSE_ERROR: "invalid_json",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "method_not_found",
    INVALID_PARAMS: "invalid_input",
}
STREAM_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}
RPC_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "description": "A JSON-RPC 2.0 request for one of the A2A methods.",
                "required": ["jsonrpc", "method"],
            }
        }
    },
}
RPC_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A JSON-RPC response, or (streaming methods) server-sent events",
        "content": {"application/json": {}, SSE: {}},
    },
    **{
        status: {"description": f"{text}, as a JSON-RPC error object"}
        for status, text in (
            (400, "Not JSON-RPC, or not the method's params"),
            (403, "Another principal's context"),
            (404, "An unknown method or task"),
            (409, "A task that is not waiting for input, or cannot be canceled"),
            (429, "The caller's daily budget is spent"),
        )
    },
}


class RpcError(Exception):
    """A JSON-RPC error and the HTTP status it is sent with."""

    def __init__(
        self,
        code: int,
        message: str,
        status: int,
        *,
        reason: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status
        self.reason = reason or REASONS.get(code, "server_error")
        self.headers = headers or {}

    @classmethod
    def of(cls, exc: HttpError) -> RpcError:
        """One of our HTTP errors as the JSON-RPC error that says the same."""
        codes = {400: INVALID_PARAMS, 404: TASK_NOT_FOUND}
        headers = getattr(exc, "headers", None)
        message = exc.message or exc.code
        code = codes.get(exc.status, SERVER_ERROR)
        return cls(code, message, exc.status, reason=exc.code, headers=headers)

    def body(self, rpc_id: Any) -> Obj:
        info = {
            "@type": ERROR_INFO,
            "reason": self.reason.upper(),
            "domain": "agentkit",
            "metadata": {"status": str(self.status)},
        }
        error = {"code": self.code, "message": self.message, "data": [info]}
        return {"jsonrpc": "2.0", "id": rpc_id, "error": error}


@dataclass(frozen=True, slots=True)
class Call:
    id: Any
    method: str
    version: str  # "1.0" or "0.3": the shapes of the params and the result
    params: Obj


@dataclass(frozen=True, slots=True)
class Incoming:
    """The user message of a send: its text, context and task, and a decision in it."""

    text: str
    context_id: str | None
    task_id: str | None
    decision: Decision | None


Handler = Callable[["Route", Call], Awaitable[Response]]


@dataclass(slots=True)
class Route:
    """What a method needs: the request, the agent, the caller."""

    request: Request
    service: AgentService
    sends: KeyedSends
    options: ServerOptions
    caller: Principal


def a2a_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    sends = KeyedSends(mount.service)
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: A2A"])

    @router.post(
        RPC_PATH,
        response_class=Response,
        responses=RPC_RESPONSES,
        openapi_extra={"requestBody": RPC_BODY},
    )
    async def a2a(request: Request, caller: Caller) -> Response:
        """Answer one A2A JSON-RPC request (the streaming methods answer with SSE)."""
        rpc_id: Any = None
        try:
            rpc_id, raw = _envelope(await request.body())
            call = _call(rpc_id, raw)
            route = Route(request, mount.service, sends, options, caller)
            return await METHODS[call.method][1](route, call)
        except HttpError as exc:
            return _refusal(rpc_id, RpcError.of(exc))
        except RpcError as exc:
            return _refusal(rpc_id, exc)

    return router


def _refusal(rpc_id: Any, exc: RpcError) -> Response:
    return JSONResponse(exc.body(rpc_id), status_code=exc.status, headers=exc.headers)


def _result(call: Call, result: Obj) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "id": call.id, "result": result})


def _envelope(body: bytes) -> tuple[Any, Obj]:
    """The request's id and its object (errors here have no id to answer with)."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise RpcError(PARSE_ERROR, "the body is not JSON", 400) from None
    except RecursionError:
        # Valid JSON nested deeper than the parser's stack: a few kilobytes of brackets.
        raise RpcError(INVALID_REQUEST, "the body nests too deeply", 400) from None
    if not isinstance(raw, dict):
        raise RpcError(INVALID_REQUEST, "a request is one JSON-RPC object (no batches)", 400)
    rpc_id = raw.get("id")
    if isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int | None):
        raise RpcError(INVALID_REQUEST, "id must be a string, a number or null", 400)
    return rpc_id, raw


def _call(rpc_id: Any, raw: Obj) -> Call:
    method = raw.get("method")
    if raw.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, 'need "jsonrpc": "2.0" and a method', 400)
    if method not in METHODS:
        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method[:80]!r}", 404)
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object", 400)
    return Call(rpc_id, method, METHODS[method][0], params)


def _incoming(params: Obj) -> Incoming:
    message = params.get("message")
    if not isinstance(message, dict):
        raise BadRequest("params.message must be a message object", code="invalid_input")
    if message.get("role") not in ("ROLE_USER", "user"):
        raise BadRequest("the message's role must be the user's", code="invalid_input")
    raw_parts = message.get("parts")
    if raw_parts is not None and not isinstance(raw_parts, list):
        raise BadRequest("the message's parts must be a list", code="invalid_input")
    parts = [p for p in raw_parts or [] if isinstance(p, dict)]
    text = "\n".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
    decision: Decision | None = None
    for part in parts:
        data = part.get("data")
        if isinstance(data, dict) and data.get("decision") in ("approve", "deny"):
            decision = "approve" if data["decision"] == "approve" else "deny"
    if decision is None and text.strip().lower() in ("approve", "deny"):
        decision = "approve" if text.strip().lower() == "approve" else "deny"
    return Incoming(text, _id_field(message, "contextId"), _id_field(message, "taskId"), decision)


def _id_field(message: Obj, key: str) -> str | None:
    value = message.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_ID:
        raise BadRequest(f"{key} must be 1-{MAX_ID} characters", code="invalid_input")
    return thread_key(value, key)


async def _task_of(route: Route, task_id: object) -> tuple[A2aTask, int]:
    """The task `task_id` names, folded from its session's events (404 when it names
    none of this caller's contexts' turns; 403 for another principal's), and where the
    turn's events start."""
    target = split_task_id(task_id)
    if target is None:
        raise NotFound("this id names no task", code="task_not_found")
    session_id, turn_id = target
    try:
        record = await route.service.get_session(session_id, principal=route.caller)
    except (NotFound, ValueError):
        raise NotFound("this id names no task", code="task_not_found") from None
    if record.channel_id != CHANNEL or record.continuation_key is None:
        raise NotFound("this id names no task", code="task_not_found")
    events = await route.service.read_events(session_id, principal=route.caller)
    if not any(e.turn_id == turn_id for e in events):
        raise NotFound("this id names no task", code="task_not_found")
    task = A2aTask(record.continuation_key, session_id, turn_id)
    for event in events:
        task.feed(event)
    return task, turn_start(events, turn_id)


async def _plan(route: Route, incoming: Incoming) -> tuple[A2aTask, int]:
    """Start the turn the message asks for (or continue the parked one it answers)."""
    if incoming.task_id is not None:
        return await _answer(route, incoming)
    if not incoming.text.strip():
        raise BadRequest("the message has no text part", code="invalid_input")
    context_id = incoming.context_id or f"ctx-{uuid.uuid4().hex}"
    session_id, turn_id, start = await send_to_thread(
        route.sends, CHANNEL, context_id, incoming.text, principal=route.caller
    )
    return A2aTask(context_id, session_id, turn_id), start


async def _answer(route: Route, incoming: Incoming) -> tuple[A2aTask, int]:
    """Decide the approvals an `input-required` task waits for; its turn then goes on."""
    task, start = await _task_of(route, incoming.task_id)
    if incoming.context_id not in (None, task.context_id):
        raise BadRequest("this task is not of this context", code="invalid_input")
    if task.state != INPUT_REQUIRED:
        raise Conflict("this task is not waiting for input", code="task_not_waiting")
    if incoming.decision is None:
        raise BadRequest(
            'answer with a data part {"decision": "approve"|"deny"}', code="invalid_input"
        )
    service, caller = route.service, route.caller
    pending = await service.approvals(task.session_id, principal=caller)
    for approval in pending:
        if approval.turn_id == task.turn_id:
            await service.resolve_approval(
                task.session_id, approval.call_id, incoming.decision, principal=caller
            )
    return A2aTask(task.context_id, task.session_id, task.turn_id), start


async def _prime(route: Route, task: A2aTask, start: int) -> int:
    """Fold what the turn has recorded so far (quietly); the index to follow on from."""
    events = await route.service.read_events(task.session_id, principal=route.caller, start=start)
    task.quiet_through = events[-1].index if events else start - 1
    for event in events:
        task.feed(event)
    return task.quiet_through + 1


async def _live(route: Route, task: A2aTask, start: int) -> AsyncGenerator[list[Obj], None]:
    """The stream responses of the turn's next events, until it ends or parks (or the
    client leaves, or the server's stream window ends)."""
    if task.ended:
        return
    r = route
    out = translated(
        r.request, r.service, r.options, task.session_id, task, principal=r.caller, start=start
    )
    async with aclosing(out):
        async for _, responses in out:
            yield responses


def _task_result(call: Call, task: Obj) -> Obj:
    return v03_task(task) if call.version == "0.3" else task


async def send(route: Route, call: Call) -> Response:
    """`SendMessage` / `message/send`: the task once its turn ends or parks (at once with
    `returnImmediately`, or v0.3 `blocking: false`)."""
    task, start = await _plan(route, _incoming(call.params))
    after = await _prime(route, task, start)
    config = call.params.get("configuration")
    config = config if isinstance(config, dict) else {}
    if not (config.get("returnImmediately") is True or config.get("blocking") is False):
        async with aclosing(_live(route, task, after)) as updates:
            async for _ in updates:
                pass
    snapshot = task.task(_history_length(call.params))
    return _result(call, v03_task(snapshot) if call.version == "0.3" else {"task": snapshot})


async def stream(route: Route, call: Call) -> Response:
    """`SendStreamingMessage` / `message/stream`: the task, then its updates (SSE)."""
    task, start = await _plan(route, _incoming(call.params))
    return _events(route, call, task, await _prime(route, task, start))


async def subscribe(route: Route, call: Call) -> Response:
    """`SubscribeToTask` / `tasks/resubscribe`: a task's stream again (after a dropped
    connection, or a window that ended): the task as it stands, then its updates. Nothing
    runs again; a task that has ended or parked is its snapshot alone."""
    found, start = await _task_of(route, call.params.get("id"))
    task = A2aTask(found.context_id, found.session_id, found.turn_id)
    return _events(route, call, task, await _prime(route, task, start))


def _events(route: Route, call: Call, task: A2aTask, after: int) -> Response:
    def frame(result: Obj) -> bytes:
        body = v03_event(result) if call.version == "0.3" else result
        return sse({"jsonrpc": "2.0", "id": call.id, "result": body})

    async def body() -> AsyncIterator[bytes]:
        yield frame({"task": task.task()})
        async with aclosing(_live(route, task, after)) as updates:
            async for out in updates:
                yield b"".join(frame(r) for r in out)

    return StreamingResponse(body(), media_type=SSE, headers=STREAM_HEADERS)


async def get(route: Route, call: Call) -> Response:
    """`GetTask` / `tasks/get`: the task as its events stand."""
    task, _ = await _task_of(route, call.params.get("id"))
    return _result(call, _task_result(call, task.task(_history_length(call.params))))


async def cancel(route: Route, call: Call) -> Response:
    """`CancelTask` / `tasks/cancel`: stop the task's turn and answer it once it has ended."""
    task, start = await _task_of(route, call.params.get("id"))
    if task.state in TERMINAL:
        raise RpcError(TASK_NOT_CANCELABLE, "the task has ended", 409, reason="task_not_cancelable")
    await route.service.stop(task.session_id, principal=route.caller)
    task = A2aTask(task.context_id, task.session_id, task.turn_id)
    after = await _prime(route, task, start)
    grace = float(route.service.manifest.agent.stop_grace) + 10.0
    try:
        async with asyncio.timeout(grace), aclosing(_live(route, task, after)) as updates:
            async for _ in updates:
                pass
    except TimeoutError:
        pass  # the turn has not recorded its end yet: answer the task as it stands
    return _result(call, _task_result(call, task.task()))


def _history_length(params: Obj) -> int | None:
    value = params.get("historyLength")
    if value is None:
        config = params.get("configuration")
        value = config.get("historyLength") if isinstance(config, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest("historyLength must be a non-negative integer", code="invalid_input")
    return value


METHODS: dict[str, tuple[str, Handler]] = {
    "SendMessage": ("1.0", send),
    "SendStreamingMessage": ("1.0", stream),
    "GetTask": ("1.0", get),
    "CancelTask": ("1.0", cancel),
    "SubscribeToTask": ("1.0", subscribe),
    "message/send": ("0.3", send),
    "message/stream": ("0.3", stream),
    "tasks/get": ("0.3", get),
    "tasks/cancel": ("0.3", cancel),
    "tasks/resubscribe": ("0.3", subscribe),
}
