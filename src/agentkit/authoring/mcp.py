"""`define_mcp_connection`: tools from an external MCP server.

    # agent/mcp-connections/linear.py  -> connection "linear"
    linear = define_mcp_connection(
        url="https://mcp.linear.app/mcp",
        headers={"Authorization": "Bearer ${LINEAR_TOKEN}"},
    )
    # or a local process speaking MCP over stdio
    units = define_mcp_connection(command=["python", "-m", "units_server"], env={"X": "1"})

`${VAR}` in header and env values is replaced from the environment when the connection is
opened, so secrets never sit in the code or the manifest (which lists header names only).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Transport = Literal["stdio", "http"]
Unpinned = Literal["hold", "approve"]
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def env_vars(value: str) -> list[str]:
    """The `${VAR}` names a value refers to."""
    return _VAR.findall(value)


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace `${VAR}` with its value (missing variables become empty strings)."""
    env = os.environ if environ is None else environ
    return _VAR.sub(lambda m: env.get(m.group(1), ""), value)


@dataclass(frozen=True, slots=True)
class McpConnectionDefinition:
    """How to reach one MCP server and which of its tools to expose."""

    transport: Transport
    url: str | None = None
    command: tuple[str, ...] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None
    tools: tuple[str, ...] | None = None  # None exposes every tool the server lists
    timeout: float = 30.0
    # What happens to a tool that is new or changed since `agent/mcp.lock` was written:
    # "hold" keeps it from the model, "approve" offers it behind the approval flow.
    unpinned: Unpinned = "hold"

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        return {k: expand_env(v, environ) for k, v in self.headers.items()}

    def resolved_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        return {k: expand_env(v, environ) for k, v in self.env.items()}


def define_mcp_connection(
    *,
    url: str | None = None,
    command: str | Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    description: str | None = None,
    tools: Sequence[str] | None = None,
    timeout: float = 30.0,
    unpinned: Unpinned = "hold",
) -> McpConnectionDefinition:
    """Define a connection: exactly one of `url` (streamable HTTP) or `command` (stdio)."""
    if (url is None) == (command is None):
        raise ValueError("define_mcp_connection needs exactly one of url or command")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if unpinned not in ("hold", "approve"):
        raise ValueError(f'unpinned must be "hold" or "approve", not {unpinned!r}')
    if url is not None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"MCP url must start with http:// or https://, not {url!r}")
        if env:
            raise ValueError("env applies to stdio connections (command=...), not url")
        return McpConnectionDefinition(
            transport="http",
            url=url,
            headers=dict(headers or {}),
            description=description,
            tools=tuple(tools) if tools is not None else None,
            timeout=timeout,
            unpinned=unpinned,
        )
    argv = tuple(shlex.split(command) if isinstance(command, str) else command or ())
    if not argv:
        raise ValueError("MCP command must not be empty")
    if headers:
        raise ValueError("headers apply to HTTP connections (url=...), not command")
    return McpConnectionDefinition(
        transport="stdio",
        command=argv,
        env=dict(env or {}),
        description=description,
        tools=tuple(tools) if tools is not None else None,
        timeout=timeout,
        unpinned=unpinned,
    )
