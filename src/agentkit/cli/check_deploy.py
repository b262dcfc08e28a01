"""`agentkit check-deploy --dir NEW (--state-root DIR | --url URL --token T) [--last K]`.

Replays the last K sessions of a store or a running host on the new bundle (as `agentkit
replay` does one) and exits non-zero on any divergence: a check for CI before a deploy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._shared import add_dir_argument
from agentkit.cli.replay import live_model, load_bundle
from agentkit.errors import ModelError

EXAMPLES = """\
agentkit check-deploy --dir . --state-root .agentkit --last 20
agentkit check-deploy --dir . --url "$API_URL" --token "$TOKEN" --last 50 --json
"""
EXIT_CODES = (
    "0 every session replayed with no divergence, 1 a divergence (or the agent has errors,"
    " or the sessions could not be read), 2 usage error"
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check-deploy",
        help="replay the last sessions of a store or host on a new bundle before deploying",
        description=(
            "Replay the last K recorded sessions (of a local state folder, or of a running"
            " host over HTTP) on the agent in --dir, with recorded model and tool answers."
            " Exits 1 when any session diverges."
        ),
    )
    add_dir_argument(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--state-root", type=Path, metavar="DIR", help="a state folder (as serve --state-root)"
    )
    where.add_argument("--url", help="a running host's base URL")
    parser.add_argument("--token", help="the host's bearer token (default: $AGENTKIT_TOKEN)")
    parser.add_argument("--last", type=int, default=20, metavar="K", help="sessions (20)")
    parser.add_argument("--model", metavar="ID", help="ask this model afresh (see replay)")
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per session")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentkit.replay import replay_session

    if args.last < 1:
        print("agentkit: --last takes a positive number", file=sys.stderr)
        return 2
    bundle = load_bundle(args)
    if bundle is None:
        return 1
    try:
        model = live_model(args.model)
    except ModelError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 2

    async def check() -> list[Any]:
        sessions = await _sessions(args, bundle.slug)
        return [
            await replay_session(bundle, s.events, model=model, timeout=args.timeout)
            for s in sessions
            if s.events
        ]

    try:
        reports = asyncio.run(check())
    except Exception as exc:  # an unreachable host or unreadable folder: say which
        print(f"agentkit: cannot read the recorded sessions: {exc}", file=sys.stderr)
        return 1
    ok = all(r.ok for r in reports)
    if args.json:
        body = {"ok": ok, "sessions": [r.to_dict() for r in reports]}
        print(json.dumps(body, indent=2))
    else:
        for r in reports:
            print("\n  ".join(r.lines()))
        diverged = sum(not r.ok for r in reports)
        print(f"{len(reports)} session(s) replayed, {diverged} diverged")
    return 0 if ok else 1


async def _sessions(args: argparse.Namespace, slug: str) -> list[Any]:
    from agentkit.replay.sources import host_sessions, state_dir, store_sessions

    if args.url:
        token = args.token or os.environ.get("AGENTKIT_TOKEN")
        return await host_sessions(args.url, token, args.last)
    from agentkit.store.files import FileStore

    root = state_dir(args.state_root, slug)
    if not (root / "sessions").is_dir():
        raise FileNotFoundError(f"{root} holds no sessions")
    store = FileStore(root)
    try:
        return await store_sessions(store, args.last)
    finally:
        await store.close()
