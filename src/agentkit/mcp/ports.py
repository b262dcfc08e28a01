"""What a host offers the HTTP surfaces about its MCP connections.

Apart from `mcp.connections` so that `GET /v1/info` can ask for them without loading the
MCP client and the engine's tool machinery on a cold start.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["DescribesConnections", "HoldsMcp"]


class DescribesConnections(Protocol):
    """The connections' own account of themselves (`McpConnections.describe`)."""

    def describe(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class HoldsMcp(Protocol):
    """Optional, on a mount's host: the MCP connections it opened in this process (None
    when the agent has none); `GET /v1/info` lists the tools of those that connected."""

    @property
    def mcp(self) -> DescribesConnections | None: ...
