"""The `agentkit` command line.

Every submodule of this package is a command: it exposes `register(subparsers)`, which adds
a parser whose `func` default is a callable `(args) -> int` (the exit code). Adding a
command means adding a module; `main` finds them with pkgutil. A command module also sets
`EXAMPLES` (shown under its --help) and, when its exit statuses differ from the usual
ones, `EXIT_CODES`; every command's help ends the same way.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import textwrap
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every discovered command registered on it."""
    parser = argparse.ArgumentParser(
        prog="agentkit",
        description="Define an AI agent as a folder; validate, inspect, build, run and serve it.",
    )
    from agentkit.version import __version__

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
            before = set(subparsers.choices)
            register(subparsers)
            for name in set(subparsers.choices) - before:
                _finish_help(subparsers.choices[name], module)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n  agentkit init my-agent\n  agentkit run --dir my-agent 'Hello'\n"
        "  agentkit serve --dir my-agent --dev\n\n"
        "Run `agentkit COMMAND --help` for a command's options and examples.\n"
        "On a terminal output has colour and tables; piped, it is plain text (or JSON).\n"
        "NO_COLOR turns colour off; --json prints a command's data as JSON."
    )
    return parser


EXIT_CODES = (
    "0 success, 1 the command failed (see its message), 2 usage error, 130 interrupted,"
    " 141 the output pipe closed early"
)


def _finish_help(parser: argparse.ArgumentParser, module: object) -> None:
    """Examples and exit statuses at the end of every command's --help."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parts = []
    examples = getattr(module, "EXAMPLES", "").strip("\n")
    if examples:
        parts.append("examples:\n" + "\n".join(f"  {line}" for line in examples.splitlines()))
    codes = f"exit status: {getattr(module, 'EXIT_CODES', EXIT_CODES)}"
    parts.append(textwrap.fill(codes, width=88, subsequent_indent="  "))
    parser.epilog = "\n\n".join(parts)


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
    except BrokenPipeError:
        # The reader went away (`agentkit run ... | head`): stop quietly, as Unix tools do,
        # and point stdout at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
