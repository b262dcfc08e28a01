"""`agentkit trajectory --events FILE`: tool calls, reply and usage of any events file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._shared import add_json_argument
from agentkit.cli._style import fancy
from agentkit.cli._views import print_trajectory
from agentkit.errors import StoreError

EXAMPLES = """\
agentkit trajectory --events .agentkit/traces/ses_....ndjson
agentkit trajectory --events events.ndjson --json | jq .reply
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "trajectory",
        help="print the trajectory (tool calls, reply, usage) of an events file",
        description=(
            "Read a session's events (a trace written by `agentkit run`, or a session's "
            "events.ndjson) and print its tool calls, reply and token usage: a table on a "
            "terminal, JSON when piped or with --json."
        ),
    )
    parser.add_argument("--events", required=True, type=Path, help="an NDJSON events file")
    add_json_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentkit.engine.folds.trajectory import dumps, read_events_file, trajectory
    from agentkit.store._fileblobs import blobs_beside
    from agentkit.store.large_events import restore_sync

    path: Path = args.events
    try:
        # A session's own events.ndjson names its large payloads' blobs: read them back.
        events = restore_sync(read_events_file(path), blobs_beside(path))
    except StoreError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"agentkit: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 1
    result = trajectory(events)
    if args.json or not fancy(sys.stdout):
        print(dumps(result))
    else:
        print_trajectory(result, sys.stdout)
    return 0
