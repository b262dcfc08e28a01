"""The `agentkit` command line.

Every submodule of this package is a command: it exposes `register(subparsers)`, which adds
a parser whose `func` default is a callable `(args) -> int` (the exit code). Adding a
command means adding a module; `main` finds them with pkgutil.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every discovered command registered on it."""
    parser = argparse.ArgumentParser(
        prog="agentkit",
        description="Define an AI agent as a folder; validate, inspect, build, run and serve it.",
    )
    from agentkit import __version__

    parser.add_argument("--version", action="version", version=f"agentkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except Exception as exc:  # one broken command must not take down the others
            print(f"agentkit: the {info.name!r} command is unavailable: {exc}", file=sys.stderr)
            continue
        register = getattr(module, "register", None)
        if callable(register):
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (2 for usage errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # argparse exits on --help and usage errors
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code = func(args)
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
