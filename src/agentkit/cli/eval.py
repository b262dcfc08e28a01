"""`agentkit eval --dir .`: run the project's filesystem evals and report them.

Progress is a bar on a terminal and one plain line per case otherwise (CI logs); then a
summary table (case, status, duration, tokens, cost, first failure). Exit 0 when every case
passed (flaky too, unless the config says `flaky_fails`), 1 otherwise, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentkit.cli import _style
from agentkit.cli._eval_export import add_export
from agentkit.cli._shared import add_dir_argument, print_diagnostics, project_dir

if TYPE_CHECKING:  # the evals stack is imported when the command runs, not at CLI start
    from agentkit.authoring.evals import Trials
    from agentkit.evals.runner import CaseResult, RunResult

EXAMPLES = """\
agentkit eval --dir .
agentkit eval --dir . --tag smoke --junit reports/evals.xml
agentkit eval --dir . --baseline evals/baseline.json
agentkit eval export --session ses_123 --state-root .agentkit --dir .
"""
EXIT_CODES = (
    "0 every case passed, 1 a case failed or the agent has errors, 2 usage error, 130 interrupted"
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="run the project's evals (evals/**/*.eval.py) and report pass/fail",
        description=(
            "Run every selected eval case as real turns through the engine, in a fresh "
            "session each. --filter and --tag may repeat: a case matches any --filter and "
            "any --tag (both, when both are given). Exits 0 when all pass, 1 otherwise."
        ),
    )
    add_dir_argument(parser)
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="ID",
        help="a case id, a folder of ids or a glob (repeatable)",
    )
    parser.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="run cases with this tag (repeatable)",
    )
    parser.add_argument("--model", help="a provider:model id for every case")
    parser.add_argument("--trials", help="trials per case: a number or 'auto'")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="compare with this baseline file (cases that got worse first)",
    )
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="write this run's results to the --baseline file",
    )
    parser.set_defaults(func=run)
    add_export(parser)


def _trials(raw: str | None) -> Trials | None:
    if raw is None:
        return None
    if raw == "auto":
        return "auto"
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"--trials takes a positive number or 'auto', not {raw!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from agentkit.evals.baseline import save_baseline
    from agentkit.evals.junit import write_junit
    from agentkit.evals.runner import EvalRunner, EvalSetupError, select
    from agentkit.project.bundle import AgentBundle

    root = project_dir(args)
    if root is None:
        return 2
    if args.update_baseline and args.baseline is None:
        print("agentkit: --update-baseline needs --baseline FILE", file=sys.stderr)
        return 2
    try:
        trials = _trials(args.trials)
    except ValueError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 2
    bundle = AgentBundle.discover(root)
    if bundle.manifest.has_errors:
        print_diagnostics(bundle.manifest.diagnostics, sys.stderr)
        print("agentkit: fix the errors above before running evals", file=sys.stderr)
        return 1
    specs = select(bundle.manifest.evals, args.filter, args.tag)
    if not specs:
        print("agentkit: no eval matches (see evals/**/*.eval.py)", file=sys.stderr)
        return 1
    progress = Progress(len(specs), sys.stderr)
    try:
        runner = EvalRunner(
            bundle,
            model=args.model,
            trials=trials,
            on_progress=progress.update,
        )
        result = asyncio.run(runner.run(specs))
    except EvalSetupError as exc:
        print(f"agentkit: {exc}", file=sys.stderr)
        return 1
    progress.done()
    print_table(result.cases, sys.stdout)
    counts = result.counts()
    print(", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no cases", file=sys.stdout)
    if args.junit is not None:
        write_junit(result, args.junit)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    if args.baseline is not None:
        if args.update_baseline:
            save_baseline(result, args.baseline)
            print(f"baseline written to {args.baseline}")
        elif not _print_comparison(result, args.baseline):
            return 1
    return 0 if result.ok else 1


def _print_comparison(result: RunResult, path: Path) -> bool:
    from agentkit.evals.baseline import compare, load_baseline

    try:
        baseline = load_baseline(path)
    except (OSError, ValueError) as exc:
        print(f"agentkit: cannot read baseline {path}: {exc}", file=sys.stderr)
        return False
    changes = compare(result, baseline)
    print("compared with baseline:" if changes else "no change from the baseline")
    for change in changes:
        print(f"  {change.describe()}")
    return True


class Progress:
    """A one-line bar on a terminal; a line per finished case elsewhere."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.finished = 0
        self.out = out
        self.tty = out.isatty()

    def update(self, what: str, result: CaseResult | None) -> None:
        if result is None:
            return
        self.finished += 1
        if self.tty:
            width = 30
            filled = width * self.finished // self.total
            bar = "#" * filled + "-" * (width - filled)
            line = f"\r[{bar}] {self.finished}/{self.total} {result.id[:40]:<40}"
            self.out.write(line)
        else:
            self.out.write(f"{result.status:<7} {result.id} ({result.duration_ms} ms)\n")
        self.out.flush()

    def done(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def print_table(cases: list[CaseResult], out: TextIO) -> None:
    """case | status | duration | tokens | cost | first failure."""
    rows: list[tuple[str, ...]] = []
    for c in cases:
        status: str = c.status
        if len(c.trials) > 1:
            status += f" {c.summary.passes}/{c.summary.trials}"
        tokens = c.usage.get("inputTokens", 0) + c.usage.get("outputTokens", 0)
        first = " ".join(c.first_failure.split())
        cost = "-" if c.cost is None else f"${c.cost:.4f}"  # "-": a price was unknown
        rows.append((c.id, status, f"{c.duration_ms} ms", str(tokens), cost, first[:80]))
    headers = ("case", "status", "duration", "tokens", "cost", "first failure")
    _style.print_table(headers, rows, out, status_column=1)
