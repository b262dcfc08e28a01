"""Channel routes: every route of `agent/channels/<id>.py` at `/v1/channels/<id><path>`.

The app only translates: the request becomes a `ChannelRequest`, the agent's
`ChannelRuntime` authenticates (the channel's own `auth`, else the agent's chain),
validates and calls the handler, and its `ChannelReply` becomes the response. A route
whose path is `/` is served with and without the trailing slash.

`POST /v1/webhooks/github` (host root, mounted only under `serve --dev`, for the local
developer or an admin) hands one GitHub-shaped delivery to every mounted GitHub channel, as
local tooling does to try a webhook flow. Each channel still checks the delivery with its own
auth: a channel with a webhook secret takes only a delivery signed with it, so approver
fields (login, `author_association`) of an unsigned delivery are never trusted.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentkit.authoring.channels import ChannelRequest, Route
from agentkit.errors import Forbidden, Unauthorized
from agentkit.server.auth import is_direct_loopback
from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.state import server_state

GITHUB_KIND = "github"


async def channel_request(request: Request, path: str) -> ChannelRequest:
    return ChannelRequest(
        method=request.method,
        path=path,
        headers=dict(request.headers),
        query=dict(request.query_params),
        body=await request.body(),
        loopback=is_direct_loopback(request),
    )


def _endpoint(mount: AgentMount, channel_id: str, route: Route) -> Any:
    runtime = mount.channels

    async def endpoint(request: Request) -> Response:
        req = await channel_request(request, route.path)

        def agent_chain() -> Any:
            return server_state(request).options.auth.authenticate(request)

        principal = await runtime.authenticate(channel_id, req, agent_chain)
        reply = await runtime.handle(channel_id, route, req, principal)
        return JSONResponse(reply.body, status_code=reply.status)

    endpoint.__name__ = f"channel_{channel_id}_{route.method.lower()}"
    return endpoint


def channel_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    """The routes of every channel of one agent."""
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: channels"])
    for channel_id, definition in mount.channels.channels.items():
        for route in definition.routes:
            base = f"/v1/channels/{channel_id}"
            paths = [base + route.path] + ([base] if route.path == "/" else [])
            for path in paths:
                router.add_api_route(
                    path,
                    _endpoint(mount, channel_id, route),
                    methods=[route.method],
                    summary=route.description or f"{route.method} {path}",
                    openapi_extra=_body_doc(route),
                    include_in_schema=path == paths[0],
                )
    return router


def _body_doc(route: Route) -> dict[str, Any] | None:
    schema = route.body_schema()
    if schema is None:
        return None
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def github_webhook_router(mounts: list[AgentMount]) -> APIRouter:
    """`POST /v1/webhooks/github`: fan one delivery out to every mounted GitHub channel."""
    router = DeferredRouter(tags=["host"])

    @router.post("/v1/webhooks/github")
    async def github_webhook(request: Request) -> Response:
        """The local developer only (`serve --dev`): deliver a GitHub-shaped payload to
        each GitHub channel, checked by that channel's own auth (its signature)."""
        auth = server_state(request).options.auth
        # A DNS-rebinding or cross-site page must not send one (421 / 403 / 415): it would
        # start turns and have them commented with the developer's token.
        caller = auth.authenticate(request)
        if not auth.has_local_rights(request, caller):
            raise Forbidden("this route is for the local developer (serve --dev)")
        delivered: list[dict[str, Any]] = []
        for mount in mounts:
            runtime = mount.channels
            if runtime is None:
                continue
            for channel_id, definition in runtime.channels.items():
                route = definition.find_route("POST", "/")
                if definition.kind != GITHUB_KIND or route is None:
                    continue
                req = await channel_request(request, route.path)
                try:
                    admitted = await runtime.authenticate(channel_id, req, lambda: caller)
                except Unauthorized as exc:
                    delivered.append(
                        {
                            "agent": mount.slug,
                            "channel": channel_id,
                            "status": exc.status,
                            "body": {"ok": False, "error": exc.code, "message": str(exc)},
                        }
                    )
                    continue
                reply = await runtime.handle(channel_id, route, req, admitted)
                delivered.append(
                    {
                        "agent": mount.slug,
                        "channel": channel_id,
                        "status": reply.status,
                        "body": reply.body,
                    }
                )
        return JSONResponse({"ok": True, "delivered": delivered})

    return router
