"""The app's shared state (`app.state.agentkit`) and the request dependencies built on it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.requests import Request

from agentkit.server.logs import LogBuffer
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.sessions import Principal


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


def principal(request: Request) -> Principal:
    """FastAPI dependency: run the auth chain (401 when no policy admits)."""
    return server_state(request).options.auth.authenticate(request)


def public_base(request: Request, base_path: str) -> str:
    """The absolute URL prefix of one agent, as the client reached this server."""
    return str(request.base_url).rstrip("/") + base_path
