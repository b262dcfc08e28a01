"""`agentkit validate`: print the diagnostics of an agent folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._shared import add_dir_argument, discover_manifest, print_diagnostics, summary
from agentkit.cli._style import say

EXAMPLES = """\
agentkit validate --dir .
agentkit validate --dir . --json
"""
EXIT_CODES = "0 no errors (warnings allowed), 1 the agent has error diagnostics, 2 usage error"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="check an agent folder and print its diagnostics",
        description=(
            "Discover the agent in --dir and print every diagnostic (errors, warnings). "
            "Exits 1 when there is an error-severity diagnostic, 0 otherwise."
        ),
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the diagnostics as a JSON array")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="do not connect to MCP servers to compare their tools with agent/mcp.lock",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    manifest = discover_manifest(args)
    if manifest is None:
        return 2
    if manifest.mcp_lock and manifest.mcp_connections and not args.offline:
        from agentkit.cli.mcp import drift_report
        from agentkit.project.bundle import AgentBundle

        found = drift_report(AgentBundle(manifest, Path(args.dir).resolve()))
        manifest = manifest.model_copy(update={"diagnostics": [*manifest.diagnostics, *found]})
    if args.json:
        payload = [d.model_dump(by_alias=True, mode="json") for d in manifest.diagnostics]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print_diagnostics(manifest.diagnostics, sys.stdout)
        status = "invalid" if manifest.has_errors else "valid"
        say(
            f"{manifest.agent.name}: {status} ({summary(manifest.diagnostics)})",
            sys.stdout,
            word=status,
        )
    return 1 if manifest.has_errors else 0
