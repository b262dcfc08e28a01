"""A Python client of the agentkit HTTP API.

    from agentkit.client import Client

    with Client("http://127.0.0.1:3000/helpdesk") as client:
        session = client.start("What can you do?")
        print(session.reply_text())
        session.send("Make it shorter.")          # the continuation token rotates for you
        for event in session.events():            # typed events, resumed across drops
            ...

`AsyncClient` has the same calls, awaited. The client speaks HTTP only; it never imports
the server or the engine.
"""

from agentkit.client._async import AsyncClient, AsyncSession
from agentkit.client._errors import (
    ApiError,
    AuthError,
    ClientError,
    ConflictError,
    ConnectionLost,
    NotFoundError,
    SessionBusy,
    StaleToken,
    StreamGap,
    TurnError,
)
from agentkit.client._models import Accepted, Approval, SessionSummary, ToolCall
from agentkit.client._sync import Client, Session

__all__ = [
    "Accepted",
    "ApiError",
    "Approval",
    "AsyncClient",
    "AsyncSession",
    "AuthError",
    "Client",
    "ClientError",
    "ConflictError",
    "ConnectionLost",
    "NotFoundError",
    "Session",
    "SessionBusy",
    "SessionSummary",
    "StaleToken",
    "StreamGap",
    "ToolCall",
    "TurnError",
]
