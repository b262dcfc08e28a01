"""Per-agent routes besides sessions: direct tool calls and discovery/meta."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from agentkit.errors import BadRequest, Forbidden, NotFound
from agentkit.mcp.ports import HoldsMcp
from agentkit.project.manifest import Manifest
from agentkit.server.http_errors import JSONResponse
from agentkit.server.idempotent import IDEMPOTENT_ROUTE, answer_once
from agentkit.server.logs import LogBuffer
from agentkit.server.options import AgentMount, NamedHost, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.schemas import (
    Health,
    LogLine,
    LogPage,
    Meta,
    ToolCallBody,
    ToolCallPending,
    ToolCallResult,
)
from agentkit.server.state import known_session_id, principal, server_state
from agentkit.sessions import Principal

Caller = Annotated[Principal, Depends(principal)]


def tool_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: tools"])

    @router.post(
        "/v1/tools/{tool_name}",
        response_model=ToolCallResult,
        response_model_by_alias=True,
        responses={202: {"model": ToolCallPending, "description": "Parked for approval"}},
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def call_tool(
        request: Request,
        tool_name: Annotated[str, Path(max_length=200)],
        body: ToolCallBody,
        caller: Caller,
    ) -> ToolCallResult | Response:
        """Run a server tool with no model turn (inside a session when `sessionId` is given).

        A call that needs approval is refused without a session (403 `approval_required`)
        and parked on the session with one (202, `status: "pending_approval"`)."""
        manifest = service.manifest
        spec = manifest.tool(tool_name)
        server_tools = sorted(t.name for t in manifest.tools if t.execution == "server")
        if spec is None:
            raise NotFound(
                f"unknown tool {tool_name[:80]!r}", code="tool_not_found", available=server_tools
            )
        if spec.execution != "server":
            raise BadRequest(
                f"{tool_name} runs inside the agent's workspace, not on the host",
                code="agent_execution_tool",
            )
        session_id = known_session_id(body.session_id) if body.session_id else None

        async def work() -> ToolCallResult | JSONResponse:
            outcome = await service.call_tool(
                tool_name, body.input, principal=caller, session_id=session_id
            )
            if outcome.pending_approval:
                pending = ToolCallPending(tool_name=outcome.tool_name, call_id=outcome.call_id)
                return JSONResponse(pending.model_dump(by_alias=True), status_code=202)
            return ToolCallResult(
                tool_name=outcome.tool_name,
                call_id=outcome.call_id,
                is_error=outcome.is_error,
                result=outcome.result,
                duration_ms=outcome.duration_ms,
            )

        return await answer_once(request, service, caller, "call_tool", work)

    return router


def meta_router(
    mount: AgentMount, options: ServerOptions, logs: LogBuffer, *, health: bool = True
) -> APIRouter:
    service = mount.service
    base_path = options.base_path(mount.slug)
    router = DeferredRouter(prefix=base_path, tags=[f"{mount.slug}: meta"])

    @router.get("/v1/info", responses={200: {"model": Manifest}})
    async def info(caller: Caller) -> JSONResponse:
        """The manifest snapshot (the same JSON as `agentkit info --json`)."""
        manifest: Manifest = service.manifest
        body = manifest.model_dump(by_alias=True, mode="json")
        # MCP connections that have connected in this process list their tools as served.
        connections = mount.host.mcp if isinstance(mount.host, HoldsMcp) else None
        if connections is not None:
            live = {c["name"]: c for c in connections.describe()}
            for item in body.get("mcpConnections", []):
                if "tools" in live.get(item["name"], {}):
                    item["listedTools"] = live[item["name"]]["tools"]
        return JSONResponse(body)

    if health:

        @router.get("/v1/health", response_model=Health, response_model_by_alias=True)
        async def agent_health() -> Health:
            """Liveness of this agent (no auth)."""
            return Health()

    @router.get("/v1/meta", response_model=Meta, response_model_by_alias=True)
    async def meta() -> Meta:
        """What the playground needs to boot (no auth)."""
        return Meta(
            name=mount.name,
            slug=mount.slug,
            dev=options.dev,
            base_path=base_path,
            playground=options.playground,
            docs=options.docs,
            host=mount.host.kind if isinstance(mount.host, NamedHost) else "local",
        )

    @router.get("/v1/logs", response_model=LogPage, response_model_by_alias=True)
    async def recent_logs(
        request: Request,
        caller: Caller,
        after: Annotated[int, Query(ge=0, le=2**53)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 500,
    ) -> LogPage:
        """Server log lines newer than `after`, oldest first (local developer only).

        The buffer holds every principal's lines (tools' `ctx.logger` output included), so
        it is served only to a direct loopback caller, the same rule as the dev routes; any
        other principal gets 403."""
        auth = server_state(request).options.auth
        if not auth.has_local_rights(request, caller):
            raise Forbidden(
                "server logs are for the local developer (a direct loopback caller)",
                code="logs_local_only",
            )
        if after > logs.last_seq:
            after = 0  # the server restarted since the client's cursor: start over
        entries = logs.after(after, limit)
        cursor = entries[-1].seq if entries else max(after, 0)
        return LogPage(
            lines=[
                LogLine(seq=e.seq, at=e.at, level=e.level, logger=e.logger, message=e.message)
                for e in entries
            ],
            cursor=cursor,
        )

    return router
