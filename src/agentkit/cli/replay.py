"""`agentkit replay --events FILE --dir DIR`: re-run a recorded session on a bundle.

The recorded model steps and tool results stand in for the live ones (no network, no side
effects); `--model` asks that model afresh while tools still answer from the recording.
Exit 0 with no divergence, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._shared import add_dir_argument, print_diagnostics, project_dir
from agentkit.errors import ModelError

if TYPE_CHECKING:  # the project stack is imported when the command runs, not at CLI start
    from agentkit.models.base import Model
    from agentkit.project.bundle import AgentBundle

EXAMPLES = """\
agentkit replay --events session.ndjson --dir .
agentkit replay --events session.ndjson --dir . --json
agentkit replay --events session.ndjson --dir . --model anthropic:claude-sonnet-4-5
"""
EXIT_CODES = (
    "0 no divergence, 1 the trajectory diverged (or the agent has errors), 2 usage error or"
    " an unreadable recording"
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="re-run a recorded session on the agent with recorded model and tool answers",
        description=(
            "Re-run every recorded turn of a session (its NDJSON event stream, as the stream"
            " route or the file store writes it) through the engine on the agent in --dir."
            " Recorded model steps and tool results stand in for live ones; nothing leaves"
            " the process. Reports each divergence at its event index."
        ),
    )
    parser.add_argument("--events", type=Path, required=True, metavar="FILE")
    add_dir_argument(parser)
    parser.add_argument(
        "--model",
        metavar="ID",
        help="ask this model afresh each step (tools still answer from the recording)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole replay")
    parser.set_defaults(func=run)


def load_bundle(args: argparse.Namespace) -> AgentBundle | None:
    """The bundle in --dir, or None (with the reason on stderr)."""
    from agentkit.project.bundle import AgentBundle

    root = project_dir(args)
    if root is None:
        return None
    bundle = AgentBundle.discover(root)
    if bundle.manifest.has_errors:
        print_diagnostics(bundle.manifest.diagnostics, sys.stderr)
        print("agentkit: fix the errors above before replaying", file=sys.stderr)
        return None
    return bundle


def live_model(model_id: str | None) -> Model | None:
    if model_id is None:
        return None
    from agentkit.models import resolve_model

    return resolve_model(model_id)


def run(args: argparse.Namespace) -> int:
    from agentkit.replay import load_events, replay_session

    try:
        events = load_events(args.events)
    except (OSError, ValueError, KeyError) as exc:
        print(f"agentkit: cannot read {args.events}: {exc}", file=sys.stderr)
        return 2
    if not events:
        print(f"agentkit: {args.events} holds no events", file=sys.stderr)
        return 2
    bundle = load_bundle(args)
    if bundle is None:
        return 1
    try:
        model = live_model(args.model)
    except ModelError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 2
    report = asyncio.run(replay_session(bundle, events, model=model, timeout=args.timeout))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1
