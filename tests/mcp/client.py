"""The official MCP client, pointed at an agentkit `/v1/mcp` endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

LEGACY = "legacy"  # the 2025-11-25 initialize handshake
MODERN = "2026-07-28"  # no handshake; version and client info in every request
ERAS = (LEGACY, MODERN)


@asynccontextmanager
async def mcp_client(
    url: str, *, mode: str = LEGACY, token: str | None = None
) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(90))
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call's structured content, with `isError` folded in."""
    result = await client.call_tool(tool, arguments)
    out = dict(result.structured_content or {})
    out["isError"] = bool(result.is_error)
    out["text"] = "".join(getattr(c, "text", "") for c in result.content)
    return out
