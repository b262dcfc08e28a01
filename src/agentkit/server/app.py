"""The FastAPI app factory, shared by `agentkit serve` (uvicorn) and Lambda (Mangum).

`create_app` takes agents whose services a host has already composed; it never knows
whether they run on local files and asyncio tasks or on DynamoDB and Lambda. Layout:
multi mode mounts each agent under `/<slug>`, single mode serves one agent at the root.
Swagger UI lives at `/v1/api-docs` (`server.api_docs`; schema at `/v1/openapi.json`) so `/docs`
stays the project's documentation site.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi

from agentkit.engine import idempotency
from agentkit.server import otel
from agentkit.server.ab_routes import ab_router
from agentkit.server.agent_home import home_router
from agentkit.server.agent_routes import meta_router, tool_router
from agentkit.server.api_docs import api_docs_router
from agentkit.server.docs_site import docs_router
from agentkit.server.fleet_routes import fleet_router
from agentkit.server.host_routes import host_router
from agentkit.server.http_errors import JSONResponse, install_error_handlers
from agentkit.server.limits import BodyLimitMiddleware
from agentkit.server.logs import LogBuffer
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import built_routes, install_router
from agentkit.server.schemas import ErrorBody
from agentkit.server.session_routes import session_router
from agentkit.server.state import ServerState
from agentkit.server.usage_routes import usage_router
from agentkit.version import __version__

OPENAPI_URL = "/v1/openapi.json"
LOGGERS = ("agentkit", "uvicorn.error")
Hook = Callable[[], Awaitable[None]]
DESCRIPTION = (
    "The agentkit HTTP API. Errors are always `{ok:false, error, message?}`; "
    "NDJSON streams are `application/x-ndjson`, one event per line."
)
log = logging.getLogger("agentkit.server")

# Documentation only: the app's own routes build these response fields just for the OpenAPI
# document (see `server.routing`), never on the way to answering a request.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (400, "Schema-invalid body or query, or a malformed request"),
        (401, "No auth policy admitted the request"),
        (403, "Authenticated, but not the session owner"),
        (404, "Unknown session, tool or approval"),
        (409, "Stale token, busy session, or a session that takes no follow-ups"),
        (413, "Request body too large"),
    )
}


def create_app(
    agents: Sequence[AgentMount],
    options: ServerOptions | None = None,
    *,
    on_startup: Sequence[Hook] = (),
    on_shutdown: Sequence[Hook] = (),
    logs: LogBuffer | None = None,
) -> FastAPI:
    """Build the app serving `agents`. Hooks run at lifespan start/end (e.g. recovery)."""
    options = options or ServerOptions()
    mounts = list(agents)
    _check_layout(mounts, options)
    buffer = logs or LogBuffer(options.log_capacity)
    state = ServerState(options=options, mounts=mounts, logs=buffer)
    shutdown_hooks = list(on_shutdown)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        buffer.attach(*LOGGERS)
        for hook in on_startup:
            await hook()
        log.info("serving %s", ", ".join(m.slug for m in mounts))
        try:
            yield
        finally:
            state.shutdown.set()
            # Before the hosts close their stores: a keyed write still running ends and
            # keeps its answer, so its retry after a restart replays it.
            await idempotency.drain(options.drain_timeout)
            for hook in shutdown_hooks:
                try:
                    await hook()
                except Exception:  # one failing hook must not skip the others
                    log.exception("shutdown hook failed")
            buffer.detach(*LOGGERS)

    app = FastAPI(
        title="agentkit",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=OPENAPI_URL,
        lifespan=lifespan,
        default_response_class=JSONResponse,
    )
    app.state.agentkit = state
    # OpenTelemetry export, only when OTEL_EXPORTER_OTLP_* asks for it (server.otel).
    otel.install(app, shutdown_hooks)
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=options.max_body_bytes)

    single = options.mode == "single"
    # In single mode the agent's own /v1/health is the host's health route too.
    install_router(app, host_router(mounts, options, health=not single))
    for mount in mounts:
        for router in (
            session_router(mount, options),
            fleet_router(mount, options),
            tool_router(mount, options),
            meta_router(mount, options, buffer),
            ab_router(mount, options),
            usage_router(mount, options),
            home_router(mount, options),
        ):
            install_router(app, router, responses=ERROR_RESPONSES)
        if mount.channels is not None:
            from agentkit.server.channel_routes import channel_router

            install_router(app, channel_router(mount, options), responses=ERROR_RESPONSES)
        # `/v1/ag-ui`: the agent as an AG-UI agent (see docs/protocols.md).
        _include_optional(app, "agentkit.server.ag_ui_routes", "ag_ui_router", mount, options)
        # `/v1/ai-sdk/chat`: the AI SDK's UI message stream, for `useChat`.
        _include_optional(app, "agentkit.server.ai_sdk_routes", "ai_sdk_router", mount, options)
        # `/.well-known/agent-card.json` and `/v1/a2a`: the agent as an A2A agent.
        _include_optional(app, "agentkit.server.a2a_card", "a2a_card_router", mount, options)
        _include_optional(app, "agentkit.server.a2a_routes", "a2a_router", mount, options)
        # `/v1/mcp`: the agent as an MCP server (the SDK loads on the first MCP request).
        _include_optional(app, "agentkit.mcp.endpoint", "mcp_router", mount, options)
        if options.dev:
            _include_optional(app, "agentkit.server.dev_routes", "dev_router", mount, options)
        # The eval routes are always there (the playground's Evals tab), like the spec says.
        _include_optional(app, "agentkit.server.eval_routes", "eval_router", mount, options)
        if options.playground:
            # The playground SPA (`server.playground`): its page and assets.
            _include_optional(
                app, "agentkit.server.playground", "playground_router", mount, options
            )
    if options.dev and any(m.channels is not None for m in mounts):
        from agentkit.server.channel_routes import github_webhook_router

        install_router(app, github_webhook_router(mounts))
    if options.docs:
        install_router(app, docs_router(deferred=True))
    install_router(app, api_docs_router(OPENAPI_URL))
    _describe_validation_as_400(app)
    return app


def _describe_validation_as_400(app: FastAPI) -> None:
    """FastAPI documents request validation as 422; this app answers 400 (`ErrorBody`)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                routes=built_routes(app.routes),
                description=DESCRIPTION,
            )
            error_ref = {"$ref": "#/components/schemas/ErrorBody"}
            for path_item in schema.get("paths", {}).values():
                for operation in path_item.values():
                    responses = operation.get("responses", {})
                    if responses.pop("422", None) is not None and "400" not in responses:
                        responses["400"] = {
                            "description": "Schema-invalid path, query or body",
                            "content": {"application/json": {"schema": error_ref}},
                        }
            components = schema.get("components", {}).get("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _check_layout(mounts: list[AgentMount], options: ServerOptions) -> None:
    if not mounts:
        raise ValueError("create_app needs at least one agent")
    if options.mode == "single" and len(mounts) != 1:
        raise ValueError("single mode serves exactly one agent")
    slugs = [m.slug for m in mounts]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"two agents share a slug: {sorted(slugs)}")
    reserved = {"v1", "docs", "playground"}
    clash = reserved.intersection(slugs) if options.mode == "multi" else set()
    if clash:
        raise ValueError(
            f"agent slug(s) {sorted(clash)} collide with host routes; rename the folder"
        )


def _include_optional(
    app: FastAPI, module_name: str, factory_name: str, mount: AgentMount, options: ServerOptions
) -> None:
    """Include `module.factory(mount, options)` when that module exists.

    Dev routes (`server.dev_routes`) and the playground (`server.playground`) plug in this
    way, each as a router factory over one mounted agent.
    """
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the module exists but one of its imports is missing: a real error
        return
    factory = getattr(module, factory_name, None)
    if factory is None:
        return
    router: APIRouter = factory(mount, options)
    install_router(app, router, responses=ERROR_RESPONSES)
