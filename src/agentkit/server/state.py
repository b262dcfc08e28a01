"""The app's shared state (`app.state.agentkit`) and the request dependencies built on it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from agentkit.errors import InvalidId, NotFound
from agentkit.server.logs import LogBuffer
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.sessions import Principal, validate_session_id


@dataclass(slots=True)
class ServerState:
    options: ServerOptions
    mounts: list[AgentMount]
    logs: LogBuffer
    # Set when the server begins shutting down: live streams end so connections can close.
    shutdown: asyncio.Event = field(default_factory=asyncio.Event)


def server_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.agentkit
    return state


# Declares the bearer auth in the OpenAPI document on exactly the routes that depend on
# `principal`; it never refuses a request itself (the auth chain decides).
BEARER = HTTPBearer(
    scheme_name="bearerAuth",
    description=(
        "A token given to `agentkit serve --bearer-token`, as `Authorization: Bearer <token>`. "
        "Under the default localDevStrict policy, direct loopback calls need no token; with "
        "`--allow-anonymous`, no call does."
    ),
    auto_error=False,
)


def principal(
    request: Request,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
) -> Principal:
    """FastAPI dependency: run the auth chain (401 when no policy admits)."""
    return server_state(request).options.auth.authenticate(request)


def public_base(request: Request, base_path: str) -> str:
    """The absolute URL prefix of one agent, as the client reached this server."""
    return str(request.base_url).rstrip("/") + base_path


def known_session_id(session_id: str) -> str:
    """A malformed id can name no session: 404, before it touches the store."""
    try:
        return validate_session_id(session_id)
    except InvalidId:
        raise NotFound(f"unknown session {session_id[:80]!r}", code="session_not_found") from None


def session_links(
    request: Request, options: ServerOptions, base_path: str, session_id: str
) -> tuple[str | None, str]:
    """A session's playground URL (None when the playground is off) and trace URL."""
    base = public_base(request, base_path)
    playground = f"{base}/playground?sessionId={session_id}" if options.playground else None
    return playground, f"{base}/v1/session/{session_id}/events"
