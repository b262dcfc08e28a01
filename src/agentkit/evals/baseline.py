"""A committed baseline turns a run into a comparison: which cases got worse or better.

The file is JSON, `{"version": 1, "cases": {id: {"status", "passRate"}}}`, written by
`agentkit eval --update-baseline`. `compare` ranks statuses passed > flaky > failed/error
and lists regressions first, then improvements, new and missing cases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.evals.runner import CaseResult, RunResult

__all__ = ["Change", "compare", "load_baseline", "save_baseline"]

_RANK = {"passed": 2, "flaky": 1, "failed": 0, "error": 0}


@dataclass(frozen=True, slots=True)
class Change:
    """One case whose outcome differs from the baseline."""

    id: str
    kind: str  # "worse" | "better" | "new" | "missing"
    before: str | None
    after: str | None

    def describe(self) -> str:
        return f"{self.kind:7}  {self.id}: {self.before or '-'} -> {self.after or '-'}"


def _pass_rate(case: CaseResult) -> float:
    return round(case.summary.rate, 4)


def snapshot(result: RunResult) -> dict[str, Any]:
    return {
        "version": 1,
        "cases": {
            c.id: {"status": c.status, "passRate": _pass_rate(c)}
            for c in sorted(result.cases, key=lambda c: c.id)
        },
    }


def save_baseline(result: RunResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snapshot(result), indent=2) + "\n", encoding="utf-8")


def load_baseline(path: Path) -> dict[str, dict[str, Any]]:
    """The baseline's cases; `ValueError` for a file that is not one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, dict):
        raise ValueError(f"{path} is not an eval baseline (no 'cases' object)")
    return {str(k): v for k, v in cases.items() if isinstance(v, dict)}


def compare(result: RunResult, baseline: dict[str, dict[str, Any]]) -> list[Change]:
    """Differences from the baseline, cases that got worse first."""
    changes: list[Change] = []
    now = {c.id: c for c in result.cases}
    for case_id, case in now.items():
        old = baseline.get(case_id)
        if old is None:
            changes.append(Change(case_id, "new", None, case.status))
            continue
        before = str(old.get("status"))
        a, b = _RANK.get(before, 0), _RANK[case.status]
        rate_before = float(old.get("passRate", 0.0))
        if b < a or (b == a and _pass_rate(case) < rate_before - 1e-9 and b == 1):
            changes.append(Change(case_id, "worse", before, case.status))
        elif b > a:
            changes.append(Change(case_id, "better", before, case.status))
    changes.extend(
        Change(i, "missing", str(v.get("status")), None)
        for i, v in baseline.items()
        if i not in now
    )
    order = {"worse": 0, "better": 1, "new": 2, "missing": 3}
    return sorted(changes, key=lambda c: (order[c.kind], c.id))
