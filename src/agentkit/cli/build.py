"""`agentkit build`: write manifest.json and the agent's code into a deployable folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._shared import add_dir_argument, print_diagnostics, project_dir
from agentkit.cli._style import say
from agentkit.errors import ProjectError

EXAMPLES = """\
agentkit build --dir . --out build
agentkit build --dir . --out build --target aws    # also refuse what AWS cannot run
agentkit build --dir . --out build --json
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "build",
        help="compile the agent into a self-contained folder (manifest.json + code)",
        description=(
            "Discover the agent in --dir and write --out: manifest.json plus a copy of "
            "agent/ (and evals/), loadable with no folder walk. Refuses to build when "
            "there are error diagnostics. Two builds of one input are byte-identical."
        ),
    )
    add_dir_argument(parser)
    parser.add_argument(
        "--out", required=True, type=Path, help="the folder to write (replaced if it holds a build)"
    )
    parser.add_argument(
        "--target",
        choices=("local", "aws"),
        default="local",
        help="aws: also refuse what AWS cannot run, such as cron EventBridge cannot express",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print what was built (agent, folder, files, diagnostics) as JSON",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = project_dir(args)
    if root is None:
        return 2
    try:
        from agentkit.project.build import build_project

        result = build_project(root, args.out)
    except ProjectError as exc:
        print(f"agentkit build: {str(exc).splitlines()[0]}", file=sys.stderr)
        print_diagnostics(list(exc.diagnostics), sys.stderr)
        return 1
    for d in result.manifest.diagnostics:
        if args.target == "aws" and d.code == "schedule.cron_not_on_aws":
            continue  # reported below as the error it is for this target
        print_diagnostics([d], sys.stderr)
    if args.target == "aws":
        from agentkit.aws.check import aws_diagnostics

        refused = aws_diagnostics(result.manifest)
        if refused:
            print("agentkit build: the agent cannot be deployed on AWS", file=sys.stderr)
            print_diagnostics(refused, sys.stderr)
            return 1
    if args.json:
        payload = {
            "agent": result.manifest.agent.name,
            "out": str(args.out),
            "target": args.target,
            "files": [str(f) for f in result.files],
            "diagnostics": [
                d.model_dump(by_alias=True, mode="json") for d in result.manifest.diagnostics
            ],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    say(
        f"built {result.manifest.agent.name} into {args.out} ({len(result.files)} files)",
        sys.stdout,
        word="built",
    )
    return 0
