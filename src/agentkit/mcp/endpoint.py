"""`/v1/mcp`: the agent as an MCP server (streamable HTTP, stateless, JSON responses).

The protocol is the official SDK's: a low-level `mcp.server.Server` with three tools, served
by a `StreamableHTTPSessionManager(stateless=True, json_response=True)`. Both protocol eras
reach it: 2025-era clients (`initialize`, then requests; no session id is issued because
the endpoint is stateless) and 2026-07-28 clients (no handshake, `server/discover`, the
version in each request), which the SDK routes by the `MCP-Protocol-Version` header.

A session manager's `run()` may be entered once and is bound to the event loop it ran on;
Lambda (Mangum) has no lifespan worth the name, so a fresh stateless manager serves each
request. That costs a task group per request and nothing more.

Before the SDK sees a request the agent's auth chain runs (401 as everywhere else), and
the SDK's DNS-rebinding protection checks `Host` and `Origin`: loopback names, the API
Gateway domain the request came in on, and `AGENTKIT_MCP_ALLOWED_HOSTS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentkit.engine.service import AgentService
from agentkit.errors import HttpError, TooManyRequests, Unauthorized
from agentkit.sessions import Principal
from agentkit.version import __version__

# The SDK is imported on the first MCP request, not when the app is built: a Lambda cold
# start that serves the session API never pays for it.
if TYPE_CHECKING:
    from mcp import types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.server.transport_security import TransportSecuritySettings

PATH = "/v1/mcp"
ALLOWED_HOSTS_ENV = "AGENTKIT_MCP_ALLOWED_HOSTS"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
PRINCIPAL_KEY = "agentkit.principal"
Authenticate = Callable[[Request], Principal]


def allowed_hosts(scope: Scope, environ: dict[str, str] | None = None) -> list[str]:
    """The `Host` values this request may carry.

    Loopback (any port) for `agentkit serve`; on Lambda the domain API Gateway itself
    reports in the event (`requestContext.domainName`, not a client header); plus any
    comma-separated names in `AGENTKIT_MCP_ALLOWED_HOSTS` (custom domains, LAN hosts).
    """
    env = os.environ if environ is None else environ
    hosts = [h for name in LOOPBACK_HOSTS for h in (name, f"{name}:*")]
    event = scope.get("aws.event")
    if isinstance(event, dict):
        domain = (event.get("requestContext") or {}).get("domainName")
        if isinstance(domain, str) and domain:
            hosts += [domain, f"{domain}:*"]
    hosts += [h.strip() for h in env.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
    return hosts


def security_settings(scope: Scope) -> TransportSecuritySettings:
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = allowed_hosts(scope)
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _tool(name: str, description: str, model: type[BaseModel]) -> types.Tool:
    from mcp import types

    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return types.Tool(name=name, description=description, input_schema=schema)


@cache
def _tools() -> tuple[types.Tool, types.Tool, types.Tool]:
    """`ask`, `check` and `call_tool`, described once per process."""
    return (_ask(), _check(), _call_tool())


def _ask() -> types.Tool:
    from agentkit.mcp import delegate

    return _tool(
        "ask",
        "Ask the agent something: starts a conversation, or continues one with sessionId and "
        "continuationToken. Waits for the reply up to waitSeconds; a longer turn answers "
        "status=running, then poll with check.",
        delegate.AskInput,
    )


def _check() -> types.Tool:
    from agentkit.mcp import delegate

    return _tool(
        "check",
        "The state of a conversation's latest turn (completed with its reply, running, "
        "waiting_approval or failed), waiting up to waitSeconds while it runs.",
        delegate.CheckInput,
    )


def _call_tool() -> types.Tool:
    from agentkit.mcp import delegate

    return _tool(
        "call_tool",
        "Run one of the agent's server tools directly, with no model turn.",
        delegate.CallToolInput,
    )


def build_server(service: AgentService) -> Server[Any]:
    """The MCP server of one agent (cheap: built per request)."""
    from mcp import types
    from mcp.server import Server

    from agentkit.mcp import delegate  # its models load on the first MCP request

    has_server_tools = any(t.execution == "server" for t in service.manifest.tools)
    ask, check, call = _tools()
    tools = [ask, check, *([call] if has_server_tools else [])]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = _caller(ctx)
        arguments = params.arguments or {}
        try:
            if params.name == "ask":
                answer = await delegate.ask(
                    service, caller, delegate.AskInput.model_validate(arguments)
                )
                return _result(answer.wire(), answer.summary())
            if params.name == "check":
                answer = await delegate.check(
                    service, caller, delegate.CheckInput.model_validate(arguments)
                )
                return _result(answer.wire(), answer.summary())
            if params.name == "call_tool" and has_server_tools:
                out = await delegate.call_tool(
                    service, caller, delegate.CallToolInput.model_validate(arguments)
                )
                text = json.dumps(out["result"], default=str)
                return _result(dict(out), text, is_error=bool(out["isError"]))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
            return _error("bad_request", f"{where}: {first.get('msg')}")
        except TooManyRequests as exc:
            # A refusal of the request itself, as HTTP answers 429: a JSON-RPC error with
            # the same code and message, not a tool result the model might read as an answer.
            raise _rate_limited(exc) from None
        except HttpError as exc:
            return _error(exc.code, exc.message or exc.code, status=exc.status)
        return _error("tool_not_found", f"unknown tool {params.name[:80]!r}")

    return Server(
        "agentkit",
        version=__version__,
        description=service.manifest.agent.name,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _caller(ctx: ServerRequestContext[Any]) -> Principal:
    request = ctx.request
    principal = request.scope.get(PRINCIPAL_KEY) if isinstance(request, Request) else None
    if not isinstance(principal, Principal):  # the endpoint always sets it; never trust less
        raise Unauthorized("no authenticated caller")
    return principal


def _result(
    structured: dict[str, Any], text: str, *, is_error: bool = False
) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def _rate_limited(exc: TooManyRequests) -> Exception:
    from mcp.shared.exceptions import MCPError

    message = exc.message or exc.code
    data = {"ok": False, "error": exc.code, "message": message, "retryAfter": exc.retry_after}
    return MCPError(exc.status, message, data)


def _error(code: str, message: str, *, status: int | None = None) -> types.CallToolResult:
    body: dict[str, Any] = {"ok": False, "error": code, "message": message}
    if status is not None:
        body["status"] = status
    return _result(body, f"{code}: {message}", is_error=True)


class McpEndpoint:
    """The ASGI app behind `POST /v1/mcp` for one agent."""

    def __init__(self, service: AgentService, authenticate: Authenticate) -> None:
        self.service = service
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Raised errors (401) reach the app's handlers: the usual `{ok:false,...}` JSON.
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        scope[PRINCIPAL_KEY] = self.authenticate(Request(scope, receive))
        manager = StreamableHTTPSessionManager(
            build_server(self.service),
            json_response=True,
            stateless=True,
            security_settings=security_settings(scope),
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)


def mcp_router(mount: Any, options: Any) -> APIRouter:
    """The `/v1/mcp` route of one mounted agent (`server.app` includes it).

    Only POST is routed: GET (no server-initiated stream on a stateless endpoint) and
    DELETE (no session to end) get the app's 405 with `Allow: POST`."""
    from agentkit.server.state import server_state

    def authenticate(request: Request) -> Principal:
        return server_state(request).options.auth.authenticate(request)

    router = APIRouter()
    route: Callable[..., Awaitable[None]] = McpEndpoint(mount.service, authenticate)
    router.routes.append(
        Route(options.base_path(mount.slug) + PATH, route, methods=["POST"], name="mcp")
    )
    return router
