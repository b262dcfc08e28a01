"""Snapshots of connected servers' tools, for `agentkit mcp lock` and drift reports."""

from __future__ import annotations

from agentkit.mcp.connections import McpSource, McpTool, connections_for
from agentkit.mcp.naming import assign_names
from agentkit.project.manifest import Diagnostic
from agentkit.project.mcp_lock import LOCK_FILE, McpLock


async def list_all(bundle: McpSource) -> tuple[list[McpTool], dict[str, str]]:
    """Every connection's tools, and the error of each connection that failed."""
    connections = connections_for(bundle)
    if connections is None:
        return [], {}
    tools: list[McpTool] = []
    failed: dict[str, str] = {}
    try:
        for name, conn in connections.connections.items():
            try:
                tools.extend(await conn.list_tools())
            except Exception as exc:
                failed[name] = str(exc) or type(exc).__name__
    finally:
        await connections.aclose()
    return tools, failed


def snapshot(tools: list[McpTool]) -> McpLock:
    names = assign_names((t.connection, t.name) for t in tools)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for t in tools:
        out.setdefault(t.connection, {})[t.name] = {
            "exposedName": names[(t.connection, t.name)],
            "hash": t.digest,
        }
    return McpLock(out)


def drift(lock: McpLock, tools: list[McpTool], failed: dict[str, str]) -> list[Diagnostic]:
    """Warnings for tools that are new, changed or gone since the lock was written."""
    path = f"agent/{LOCK_FILE}"
    out: list[Diagnostic] = []

    def warn(message: str) -> None:
        out.append(
            Diagnostic(severity="warning", code="mcp.lock_drift", path=path, message=message)
        )

    for name, error in sorted(failed.items()):
        warn(f"MCP connection {name!r} could not be checked against the lock: {error}")
    seen: set[tuple[str, str]] = set()
    for t in tools:
        seen.add((t.connection, t.name))
        pin = lock.pin(t.connection, t.name, t.digest)
        if pin != "pinned":
            warn(
                f"MCP tool {t.name!r} of {t.connection!r} is {pin} since the lock was written; "
                "it is held back until `agentkit mcp lock` is run again"
            )
    for conn, entries in sorted(lock.connections.items()):
        if conn in failed:
            continue
        for tool in sorted(entries):
            if (conn, tool) not in seen:
                warn(f"MCP tool {tool!r} of {conn!r} is in the lock but no longer listed")
    return out
