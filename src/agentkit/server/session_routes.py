"""Session routes of one agent: start, follow up, stream, dump, stop, list, approvals.

Every route calls the agent's `AgentService` and nothing else; ownership, tokens and
busy-ness are the service's to decide (it raises the `HttpError`s the spec names).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from starlette.responses import Response, StreamingResponse

from agentkit.engine.on_busy import agent_on_busy
from agentkit.engine.service import Accepted
from agentkit.errors import BadRequest
from agentkit.server.fork_routes import add_fork_route
from agentkit.server.http_errors import JSONResponse
from agentkit.server.idempotent import IDEMPOTENT_ROUTE, answer_once
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.schemas import (
    ApprovalList,
    ApprovalOut,
    DecisionBody,
    DecisionResult,
    FollowUpBody,
    SessionAccepted,
    SessionList,
    StartSessionBody,
    StopResult,
)
from agentkit.server.session_listing import FILTER_PARAMETERS, fleet_query, session_list
from agentkit.server.state import known_session_id, principal, server_state, session_links
from agentkit.server.streaming import NDJSON, follow_stream, ndjson_lines
from agentkit.sessions import Principal

Caller = Annotated[Principal, Depends(principal)]
SessionIdPath = Annotated[str, Path(description="A session id (`ses_…`).", max_length=100)]
NDJSON_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "One JSON event per line: `{type, index, sessionId, turnId?, at, data}`.",
        "content": {NDJSON: {"schema": {"type": "string"}}},
    }
}


LIST_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
    },
    {
        "name": "cursor",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "maxLength": 2048},
        "description": "The `cursor` of the previous page.",
    },
]


def list_query(request: Request) -> tuple[int, str | None]:
    """`limit` (1-200, default 50) and `cursor` of a listing, or a 400 naming the bad one."""
    raw = request.query_params.get("limit")
    try:
        limit = 50 if raw is None else int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= 200:
        raise BadRequest("limit must be an integer from 1 to 200")
    cursor = request.query_params.get("cursor")
    if cursor is not None and len(cursor) > 2048:
        raise BadRequest("cursor is longer than 2048 characters")
    return limit, cursor


def session_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    base_path = options.base_path(mount.slug)
    router = DeferredRouter(prefix=base_path, tags=[f"{mount.slug}: sessions"])

    def accepted(request: Request, result: Accepted) -> SessionAccepted:
        playground, trace = session_links(request, options, base_path, result.session_id)
        return SessionAccepted(
            session_id=result.session_id,
            continuation_token=result.continuation_token,
            turn_id=result.turn_id,
            playground_url=playground,
            trace_url=trace,
        )

    @router.post(
        "/v1/session",
        response_model=SessionAccepted,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def start_session(
        request: Request, body: StartSessionBody, caller: Caller
    ) -> SessionAccepted | Response:
        """Open a chat session; returns as soon as the message is accepted."""

        async def work() -> SessionAccepted:
            result = await service.start_session(
                body.message, principal=caller, workspace_files=body.workspace_files, source="http"
            )
            return accepted(request, result)

        return await answer_once(
            request, service, caller, "start_session", work, lambda a: accepted(request, a)
        )

    @router.post(
        "/v1/session/{session_id}",
        response_model=SessionAccepted,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def follow_up(
        request: Request, session_id: SessionIdPath, body: FollowUpBody, caller: Caller
    ) -> SessionAccepted | Response:
        """Continue a chat session; a busy turn is interrupted first. Rotates the token."""

        async def work() -> SessionAccepted:
            result = await service.follow_up(
                known_session_id(session_id),
                body.continuation_token,
                body.message,
                principal=caller,
                workspace_files=body.workspace_files,
                source="http",
                on_busy=body.on_busy or agent_on_busy(service.manifest),
            )
            return accepted(request, result)

        return await answer_once(
            request, service, caller, "follow_up", work, lambda a: accepted(request, a)
        )

    @router.get(
        "/v1/session/{session_id}/stream",
        response_class=StreamingResponse,
        responses=NDJSON_RESPONSE,
    )
    async def stream(
        request: Request,
        session_id: SessionIdPath,
        caller: Caller,
        start_index: Annotated[int, Query(alias="startIndex", ge=0, le=2**53)] = 0,
        window: Annotated[
            float | None,
            Query(gt=0, le=86_400, description="Stop following after this many seconds."),
        ] = None,
    ) -> StreamingResponse:
        """Replay from `startIndex`, then follow live (NDJSON)."""
        sid = known_session_id(session_id)
        await service.get_session(sid, principal=caller)  # 404/403 before the 200 starts
        limit = options.max_stream_window
        if limit is not None:
            window = limit if window is None else min(window, limit)
        body = follow_stream(
            service,
            sid,
            principal=caller,
            start=start_index,
            window=window,
            poll=options.stream_poll,
            shutdown=server_state(request).shutdown,
            once=options.stream_until_first_events,
        )
        return StreamingResponse(
            body,
            media_type=NDJSON,
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    @router.get(
        "/v1/session/{session_id}/events", response_class=Response, responses=NDJSON_RESPONSE
    )
    async def events(
        session_id: SessionIdPath,
        caller: Caller,
        start_index: Annotated[int, Query(alias="startIndex", ge=0, le=2**53)] = 0,
    ) -> Response:
        """The recorded stream as a one-shot NDJSON dump."""
        recorded = await service.read_events(
            known_session_id(session_id), principal=caller, start=start_index
        )
        return Response(ndjson_lines(recorded), media_type=NDJSON)

    @router.get(
        "/v1/sessions",
        responses={200: {"model": SessionList}},
        openapi_extra={"parameters": LIST_PARAMETERS + FILTER_PARAMETERS},
    )
    async def sessions(caller: Caller, request: Request) -> JSONResponse:
        """The caller's sessions, newest first (an admin's: anyone's), filtered by status,
        principal, cost and start time."""
        # The query is read here rather than declared as FastAPI parameters: a declared
        # parameter or response model makes the route's first build load `pydantic.v1`
        # (FastAPI's compatibility check) and a schema, the largest part of a cold
        # start's first store read (bench/bench_coldstart.py). The documented schema is
        # the same (`LIST_PARAMETERS`).
        limit, cursor = list_query(request)
        listed = await session_list(service, caller, fleet_query(request), limit, cursor)
        return JSONResponse(listed.model_dump(mode="json", by_alias=True))

    _add_stop_route(router, mount)
    _add_approval_routes(router, mount)
    add_fork_route(router, mount, options)
    return router


def _add_stop_route(router: APIRouter, mount: AgentMount) -> None:
    service = mount.service

    @router.post(
        "/v1/session/{session_id}/stop",
        response_model=StopResult,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def stop(
        request: Request, session_id: SessionIdPath, caller: Caller
    ) -> StopResult | Response:
        """Interrupt the in-flight turn without sending a message."""

        async def work() -> StopResult:
            stopped = await service.stop(known_session_id(session_id), principal=caller)
            return StopResult(stopped=stopped)

        return await answer_once(request, service, caller, "stop", work)


def _add_approval_routes(router: APIRouter, mount: AgentMount) -> None:
    service = mount.service

    @router.get(
        "/v1/session/{session_id}/approvals",
        response_model=ApprovalList,
        response_model_by_alias=True,
    )
    async def approvals(session_id: SessionIdPath, caller: Caller) -> ApprovalList:
        """Tool calls parked on a human decision."""
        pending = await service.approvals(known_session_id(session_id), principal=caller)
        return ApprovalList(
            approvals=[
                ApprovalOut(
                    call_id=p.call_id,
                    tool_name=p.tool_name,
                    arguments=p.arguments,
                    turn_id=p.turn_id,
                    requested_at=p.requested_at,
                )
                for p in pending
            ]
        )

    @router.post(
        "/v1/session/{session_id}/approvals/{call_id}",
        response_model=DecisionResult,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def resolve(
        request: Request,
        session_id: SessionIdPath,
        call_id: Annotated[str, Path(max_length=200)],
        body: Annotated[DecisionBody, Body()],
        caller: Caller,
    ) -> DecisionResult | Response:
        """Approve or deny one parked tool call; the parked turn resumes."""

        async def work() -> DecisionResult:
            await service.resolve_approval(
                known_session_id(session_id), call_id, body.decision, principal=caller
            )
            return DecisionResult(call_id=call_id, decision=body.decision)

        return await answer_once(request, service, caller, "resolve_approval", work)
