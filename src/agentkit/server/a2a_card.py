"""`GET /.well-known/agent-card.json`: the agent's A2A agent card, made from the manifest.

The card names the agent, describes it (the first line of its instructions), lists its
skills and tools as A2A skills, and points at the one JSON-RPC endpoint (`/v1/a2a`, see
`server.a2a_routes`) by the absolute URL the client reached this server at, so a path
prefix (an API Gateway stage, an ASGI `root_path`, multi mode's `/<slug>`) is part of it.
It declares the bearer scheme only when the auth chain admits bearer tokens (or JWTs).

One card serves both protocol versions the endpoint speaks: the v1 fields
(`supportedInterfaces`, `securityRequirements`, typed `securitySchemes`) and the v0.3 ones
(`url`, `protocolVersion`, `preferredTransport`, `security`) side by side, as the A2A SDK's
own server writes them. The card runs the auth chain like `/v1/info`, which shows the same
tools: a caller that may not use the agent does not learn what it can do.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request

from agentkit.project.frontmatter import first_line
from agentkit.project.manifest import Manifest
from agentkit.server.auth import AuthChain
from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.session_routes import Caller
from agentkit.server.state import public_base, server_state
from agentkit.version import __version__

CARD_PATH = "/.well-known/agent-card.json"
RPC_PATH = "/v1/a2a"
BINDING = "JSONRPC"
VERSIONS = ("1.0", "0.3")
SCHEME = "bearerAuth"
DESCRIPTION_CHARS = 300


def agent_card(manifest: Manifest, auth: AuthChain, rpc_url: str) -> dict[str, Any]:
    """The card of the agent `manifest` describes, served by JSON-RPC at `rpc_url`."""
    text = first_line(manifest.instructions) or f"The {manifest.agent.name} agent."
    card: dict[str, Any] = {
        "name": manifest.agent.name,
        "description": text[:DESCRIPTION_CHARS],
        "supportedInterfaces": [
            {"url": rpc_url, "protocolBinding": BINDING, "protocolVersion": v} for v in VERSIONS
        ],
        "version": __version__,
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills(manifest),
        # v0.3 readers find the same endpoint here.
        "url": rpc_url,
        "preferredTransport": BINDING,
        "protocolVersion": "0.3.0",
    }
    scheme = _bearer_scheme(auth)
    if scheme is not None:
        card["securitySchemes"] = {
            SCHEME: {
                "httpAuthSecurityScheme": scheme,
                "type": "http",  # the v0.3 (OpenAPI) shape of the same scheme
                **scheme,
            }
        }
        card["securityRequirements"] = [{"schemes": {SCHEME: {"list": []}}}]
        card["security"] = [{SCHEME: []}]
    return card


def _bearer_scheme(auth: AuthChain) -> dict[str, str] | None:
    """The HTTP bearer scheme the chain takes tokens by: bearer tokens (`serve
    --bearer-token`, a deployed bearer secret; both policies are named `bearerAuth`), or
    the JWTs API Gateway's authorizer checks. None for the other policies (loopback,
    anonymous, IAM's signed requests, which no A2A scheme describes)."""
    names = {p.name for p in auth.policies}
    if "bearerAuth" in names:
        return {"scheme": "Bearer"}
    if "jwtAuthorizer" in names:
        return {"scheme": "Bearer", "bearerFormat": "JWT"}
    return None


def skills(manifest: Manifest) -> list[dict[str, Any]]:
    """The agent's skills, then its own tools (built-in tools are the engine's, not listed)."""
    out = [
        {"id": f"skill:{s.name}", "name": s.name, "description": s.description, "tags": ["skill"]}
        for s in manifest.skills
    ]
    for tool in manifest.tools:
        if tool.ref is None:
            continue
        tags = ["tool"] + (["needs-approval"] if tool.needs_approval else [])
        out.append(
            {
                "id": f"tool:{tool.name}",
                "name": tool.name,
                "description": tool.description,
                "tags": tags,
            }
        )
    return out


def a2a_card_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    base_path = options.base_path(mount.slug)
    router = DeferredRouter(prefix=base_path, tags=[f"{mount.slug}: A2A"])

    @router.get(
        CARD_PATH,
        responses={200: {"description": "The A2A agent card (v1 and v0.3 fields)"}},
    )
    async def card(request: Request, caller: Caller) -> JSONResponse:
        """The agent's A2A agent card."""
        url = public_base(request, base_path) + RPC_PATH
        body = agent_card(mount.service.manifest, server_state(request).options.auth, url)
        return JSONResponse(body, headers={"cache-control": "no-cache"})

    return router
