"""Helpers shared by the project commands (not a command: the name starts with `_`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the project stack is imported by the commands that use it
    from agentkit.project.manifest import Diagnostic, Manifest


def add_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        default=".",
        type=Path,
        help="the project folder, the one holding agent/ (default: the current folder)",
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """`--json` of a command that prints a table on a terminal and JSON otherwise."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON (the default when output is not a terminal)",
    )


def project_dir(args: argparse.Namespace) -> Path | None:
    """The `--dir` folder, or None (with a message on stderr) when it does not exist."""
    path = Path(args.dir)
    if not path.is_dir():
        print(f"agentkit: {path} is not a folder", file=sys.stderr)
        return None
    return path


def discover_manifest(args: argparse.Namespace) -> Manifest | None:
    """The manifest of the agent in `--dir`, or None (with a message on stderr) when the
    folder does not exist. Problems in the agent itself are diagnostics in the manifest."""
    from agentkit.project.bundle import AgentBundle

    root = project_dir(args)
    return None if root is None else AgentBundle.discover(root).manifest


def print_diagnostics(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One line per diagnostic (continuation lines indented); a table on a terminal."""
    from agentkit.cli._style import fancy, print_table

    if diagnostics and fancy(out):
        rows = [[d.severity, d.path, d.message, d.code] for d in diagnostics]
        print_table(["severity", "file", "problem", "code"], rows, out, status_column=0)
        return
    for d in diagnostics:
        head, _, rest = d.message.partition("\n")
        print(f"{d.severity:<7} {d.path}: {head} [{d.code}]", file=out)
        for line in rest.splitlines():
            print(f"        {line}", file=out)


def summary(diagnostics: list[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = sum(d.severity == "warning" for d in diagnostics)
    return f"{errors} error(s), {warnings} warning(s)"
