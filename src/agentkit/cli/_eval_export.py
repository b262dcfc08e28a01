"""`agentkit eval export --session ID (--state-root DIR | --url URL [--token T])`.

Writes `evals/<name>.eval.py` in the project of --dir: the session's inputs as steps, its
trajectory as assertions (see `agentkit.replay.export`). A part of the `eval` command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._shared import add_dir_argument, project_dir

CONFIG = """\
from agentkit import define_evals_config

config = define_evals_config()
"""


def add_export(eval_parser: argparse.ArgumentParser) -> None:
    """Add the `export` action under `agentkit eval`."""
    actions = eval_parser.add_subparsers(dest="eval_action", metavar="ACTION")
    parser = actions.add_parser(
        "export",
        help="write a recorded session as an eval case (evals/<name>.eval.py)",
        description=(
            "Read a recorded session from a state folder or a running host and write it as"
            " an eval case: the user's messages and decisions as steps, assertions on the"
            " tools called (in order) and the final answer's key phrases."
        ),
    )
    parser.add_argument("--session", required=True, metavar="ID")
    add_dir_argument(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--state-root", type=Path, metavar="DIR")
    where.add_argument("--url")
    parser.add_argument("--token", help="the host's bearer token (default: $AGENTKIT_TOKEN)")
    parser.add_argument("--name", help="the case id (default: the session id)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing case")
    parser.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from agentkit.project.bundle import AgentBundle
    from agentkit.replay.export import case_source

    root = project_dir(args)
    if root is None:
        return 2
    name = args.name or args.session
    if not re.fullmatch(r"[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*", name):
        print(f"agentkit: {name!r} is not a case id (letters, digits, _ - and /)", file=sys.stderr)
        return 2
    target = root / "evals" / f"{name}.eval.py"
    if target.exists() and not args.force:
        print(f"agentkit: {target} exists (--force overwrites it)", file=sys.stderr)
        return 1
    try:
        events = asyncio.run(_events(args, AgentBundle.discover(root).slug))
    except Exception as exc:  # an unknown session, an unreachable host: say which
        print(f"agentkit: cannot read session {args.session}: {exc}", file=sys.stderr)
        return 1
    if not events:
        print(f"agentkit: session {args.session} has no events", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(case_source(events), encoding="utf-8")
    config = root / "evals" / "evals.config.py"
    if not config.exists():
        config.write_text(CONFIG, encoding="utf-8")
        print(f"wrote {config}")
    print(f"wrote {target} (run it: agentkit eval --dir {root} --filter {name})")
    return 0


async def _events(args: argparse.Namespace, slug: str) -> list[Any]:
    from agentkit.replay.sources import host_session, state_dir, store_session

    if args.url:
        token = args.token or os.environ.get("AGENTKIT_TOKEN")
        return (await host_session(args.url, token, args.session)).events
    from agentkit.store.files import FileStore

    store = FileStore(state_dir(args.state_root, slug))
    try:
        return (await store_session(store, args.session)).events
    finally:
        await store.close()
