"""`agentkit mcp lock`: pin the tools of the agent's MCP connections in `agent/mcp.lock`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from agentkit.cli._shared import add_dir_argument, print_diagnostics, project_dir

if TYPE_CHECKING:  # the project stack is imported when the command runs
    from agentkit.project.bundle import AgentBundle

EXAMPLES = """\
agentkit mcp lock --dir .     # pin each connection's tools in agent/mcp.lock
agentkit mcp check --dir .    # report tools that changed since the lock
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp", help="MCP connections: pin their tools (lock) or check them (check)"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    lock = verbs.add_parser(
        "lock",
        help="connect to every MCP connection and write agent/mcp.lock",
        description=(
            "Connect to each MCP connection, list its tools and record each one's exposed "
            "name and a hash of its description and input schema in agent/mcp.lock. Commit "
            "the file; `agentkit build` bakes it into the manifest. Exits 1 when a "
            "connection cannot be reached (the lock is not written)."
        ),
    )
    add_dir_argument(lock)
    lock.set_defaults(func=run_lock)
    check = verbs.add_parser(
        "check", help="report tools that changed since agent/mcp.lock was written"
    )
    add_dir_argument(check)
    check.set_defaults(func=run_check)


def run_lock(args: argparse.Namespace) -> int:
    from agentkit.mcp.pinning import list_all, snapshot
    from agentkit.project.bundle import AgentBundle
    from agentkit.project.mcp_lock import write_lock

    root = project_dir(args)
    if root is None:
        return 2
    bundle = AgentBundle.discover(root)
    tools, failed = asyncio.run(list_all(bundle))
    for name, error in sorted(failed.items()):
        print(f"agentkit: MCP connection {name!r}: {error}", file=sys.stderr)
    if failed:
        return 1
    lock = snapshot(tools)
    path = write_lock(root / "agent", lock)
    for conn, entries in sorted(lock.connections.items()):
        print(f"{conn}: {len(entries)} tool(s) pinned")
    print(f"wrote {path.relative_to(root)}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from agentkit.project.bundle import AgentBundle

    root = project_dir(args)
    if root is None:
        return 2
    found = drift_report(AgentBundle.discover(root))
    print_diagnostics(found, sys.stdout)
    print(f"{len(found)} drift warning(s)")
    return 0


def drift_report(bundle: AgentBundle) -> list[Any]:
    """Drift warnings for a project with a lock and connections (none otherwise)."""
    from agentkit.mcp.pinning import drift, list_all
    from agentkit.project.mcp_lock import McpLock

    manifest = bundle.manifest
    if not manifest.mcp_lock or not manifest.mcp_connections:
        return []
    tools, failed = asyncio.run(list_all(bundle))
    return drift(McpLock.from_json(manifest.mcp_lock), tools, failed)
