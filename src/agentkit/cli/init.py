"""`agentkit init`: scaffold a new agent project."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._style import say
from agentkit.cli.scaffold import scaffold
from agentkit.errors import ProjectError

EXAMPLES = """\
agentkit init my-agent
agentkit init my-agent --name "Support bot"
agentkit init my-agent --json
"""
EXIT_CODES = "0 created, 1 the folder already has an agent/, 2 usage error"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "init",
        help="scaffold a new agent project that validates cleanly",
        description=(
            "Create DIR (if needed) with pyproject.toml, agent/instructions.md, "
            "agent/agent.py, a sample tool and a sample eval. Never overwrites an "
            "existing agent/ folder."
        ),
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="the folder to create the agent in")
    parser.add_argument("--name", help="the agent's name (default: the folder name)")
    parser.add_argument("--json", action="store_true", help="print the files created as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        written = scaffold(args.dir, args.name)
    except ProjectError as exc:
        print(f"agentkit init: {exc}", file=sys.stderr)
        return 1
    if args.json:
        paths = [str(Path(args.dir) / rel) for rel in written]
        print(json.dumps({"dir": str(args.dir), "created": paths}, indent=2))
        return 0
    for rel in written:
        say(f"created {Path(args.dir) / rel}", sys.stdout, word="created")
    print(f"next: agentkit validate --dir {args.dir}")
    return 0
