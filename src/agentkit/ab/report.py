"""Per-arm totals and means, comparisons, the split check and guardrails, from samples.

`Aggregate` holds the running sums of every experiment's arms; it is what the AWS snapshot
stores and what the local monitor keeps warm. `report` turns it into the `GET /v1/abs`
answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkit.ab.fold import ALIASES, METRICS, SessionFold, TurnSample
from agentkit.ab.stats import (
    ALPHA,
    TUNED_N,
    Moments,
    difference_sequence,
    mean_sequence,
    srm_check,
)
from agentkit.authoring.ab import AbDefinition

METHOD = (
    "mSPRT (normal-mixture sequential probability ratio test) confidence sequences,"
    f" alpha={ALPHA}, tuned for {TUNED_N} turns per arm; anytime-valid: safe to read after"
    " every turn"
)
NOT_ENOUGH = "not enough data"


@dataclass(slots=True)
class ArmTotals:
    sessions: int = 0
    metrics: dict[str, Moments] = field(default_factory=dict)

    def add(self, sample: TurnSample) -> None:
        for name, value in sample.metrics.items():
            self.metrics.setdefault(name, Moments()).add(value)

    @property
    def turns(self) -> int:
        m = self.metrics.get("completed")
        return m.n if m is not None else 0


@dataclass(slots=True)
class Aggregate:
    """Every experiment's arms: sessions enrolled, and moments of each per-turn metric."""

    arms: dict[str, dict[str, ArmTotals]] = field(default_factory=dict)
    paused: dict[str, dict[str, str]] = field(default_factory=dict)  # experiment -> arm -> why

    def arm(self, experiment: str, variant: str) -> ArmTotals:
        return self.arms.setdefault(experiment, {}).setdefault(variant, ArmTotals())

    def enroll(self, assignments: Mapping[str, str]) -> None:
        for experiment, variant in assignments.items():
            self.arm(experiment, variant).sessions += 1

    def add(self, sample: TurnSample) -> None:
        for experiment, variant in sample.assignments.items():
            self.arm(experiment, variant).add(sample)

    def add_session(self, fold: SessionFold) -> None:
        self.enroll(fold.assignments)
        for sample in fold.samples:
            self.add(sample)
        for p in fold.pauses:
            self.paused.setdefault(p.experiment, {}).setdefault(p.variant, p.reason)

    @classmethod
    def of(cls, folds: Iterable[SessionFold]) -> Aggregate:
        agg = cls()
        for f in folds:
            agg.add_session(f)
        return agg


def metric_name(name: str) -> str:
    return ALIASES.get(name, name)


@dataclass(frozen=True, slots=True)
class Breach:
    experiment: str
    variant: str
    metric: str
    limit: float
    lower: float

    @property
    def reason(self) -> str:
        return (
            f"guardrail {self.metric} <= {self.limit:g} breached: the confidence sequence of"
            f" its per-turn mean is above the limit (lower bound {self.lower:.6g})"
        )


def breaches(agg: Aggregate, defs: Mapping[str, AbDefinition]) -> list[Breach]:
    """Variants (not the control, not already paused) whose guardrail metric is surely over
    its limit: the lower end of the metric's confidence sequence is above it."""
    out: list[Breach] = []
    for name, ab in defs.items():
        paused = agg.paused.get(name, {})
        for variant in sorted(ab.variants):
            if variant == ab.control_arm or variant in paused:
                continue
            totals = agg.arms.get(name, {}).get(variant)
            if totals is None:
                continue
            for metric, limit in ab.guardrails.items():
                m = totals.metrics.get(metric_name(metric))
                if m is None or m.n < ab.min_samples:
                    continue
                cs = mean_sequence(m)
                if cs.lower > limit:
                    out.append(Breach(name, variant, metric, limit, cs.lower))
                    break
    return out


def _arm_wire(t: ArmTotals) -> dict[str, Any]:
    return {
        "sessions": t.sessions,
        "turns": t.turns,
        "totals": {k: round(m.total, 6) for k, m in sorted(t.metrics.items())},
        "means": {k: round(m.mean, 6) for k, m in sorted(t.metrics.items())},
        "samples": {k: m.n for k, m in sorted(t.metrics.items())},
    }


def _compare(
    ab: AbDefinition, arms: Mapping[str, ArmTotals], variant: str
) -> dict[str, dict[str, Any]]:
    control = arms.get(ab.control_arm, ArmTotals())
    mine = arms.get(variant, ArmTotals())
    out: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        a, b = mine.metrics.get(metric, Moments()), control.metrics.get(metric, Moments())
        if min(a.n, b.n) < ab.min_samples:
            out[metric] = {"status": NOT_ENOUGH, "samples": [a.n, b.n], "needed": ab.min_samples}
            continue
        cs = difference_sequence(a, b)
        status = "higher" if cs.lower > 0 else "lower" if cs.upper < 0 else "no difference yet"
        out[metric] = {
            "status": status,
            "difference": round(cs.estimate, 6),
            "lower": round(cs.lower, 6),
            "upper": round(cs.upper, 6),
        }
    return out


def experiment_report(name: str, ab: AbDefinition, agg: Aggregate) -> dict[str, Any]:
    arms = agg.arms.get(name, {})
    weights = {k: v.weight for k, v in sorted(ab.variants.items())}
    srm = srm_check({k: arms[k].sessions for k in arms if k in weights}, weights)
    guard = []
    for variant in sorted(ab.variants):
        for metric, limit in ab.guardrails.items():
            m = arms.get(variant, ArmTotals()).metrics.get(metric_name(metric), Moments())
            row: dict[str, Any] = {"variant": variant, "metric": metric, "limit": limit}
            if m.n < ab.min_samples:
                row["status"] = NOT_ENOUGH
            else:
                cs = mean_sequence(m)
                row.update(
                    mean=round(cs.estimate, 6),
                    lower=round(cs.lower, 6),
                    upper=round(cs.upper, 6),
                    status="breached" if cs.lower > limit else "ok",
                )
            guard.append(row)
    return {
        "name": name,
        "description": ab.description,
        "weights": weights,
        "sticky": ab.sticky,
        "control": ab.control_arm,
        "minSamples": ab.min_samples,
        "paused": dict(agg.paused.get(name, {})),
        "arms": {k: _arm_wire(arms.get(k, ArmTotals())) for k in sorted(ab.variants)},
        "comparisons": {
            k: _compare(ab, arms, k) for k in sorted(ab.variants) if k != ab.control_arm
        },
        "srm": srm.wire() if srm is not None else None,
        "guardrails": guard,
    }


def session_rows(folds: Iterable[SessionFold], limit: int) -> list[dict[str, Any]]:
    """The most recently started enrolled sessions, newest first."""
    enrolled = [f for f in folds if f.assignments]
    enrolled.sort(key=lambda f: f.started_at or "", reverse=True)
    rows = []
    for f in enrolled[:limit]:
        costs = [s.metrics["costUsd"] for s in f.samples if "costUsd" in s.metrics]
        rows.append(
            {
                "sessionId": f.session_id,
                "principal": f.principal,
                "startedAt": f.started_at,
                "assignments": dict(f.assignments),
                "turns": len(f.samples),
                "failedTurns": sum(int(s.metrics["failed"]) for s in f.samples),
                "costUsd": round(sum(costs), 6) if len(costs) == len(f.samples) else None,
            }
        )
    return rows


def report(
    defs: Mapping[str, AbDefinition],
    agg: Aggregate,
    sessions: list[dict[str, Any]],
    config: Mapping[str, Any],
) -> dict[str, Any]:
    """The `GET /v1/abs` body."""
    return {
        "experiments": [experiment_report(n, defs[n], agg) for n in sorted(defs)],
        "sessions": sessions,
        "config": dict(config),
        "method": METHOD,
    }


__all__ = [
    "METHOD",
    "NOT_ENOUGH",
    "Aggregate",
    "ArmTotals",
    "Breach",
    "breaches",
    "report",
    "session_rows",
]
