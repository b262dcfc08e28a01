"""The experiments over time: the readout of `GET /v1/abs` replayed sample by sample.

The recorded turns of every enrolled session are put in time order and added one by one
to the same running moments the report uses. After each sample, every comparison it
touches (arm against control, per metric) and every guardrail of its arm is read with the
same confidence-sequence functions as the report. Because the sequences are anytime-valid,
each point of the series is a readout someone could have taken at that moment, and the
last point is today's readout.

A series keeps at most `max_points` points (evenly spaced by sample, the last one always
kept), so a long experiment stays a small answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentkit.ab.fold import METRICS, SessionFold, TurnSample
from agentkit.ab.report import METHOD, metric_name
from agentkit.ab.stats import Interval, Moments, difference_sequence, mean_sequence
from agentkit.authoring.ab import AbDefinition

MAX_POINTS = 200

__all__ = ["MAX_POINTS", "experiment_timeline", "thin", "timeline"]


def _when(at: str | None) -> datetime:
    try:
        return datetime.fromisoformat((at or "").replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=None)


def _key(at: str | None) -> tuple[float, str]:
    moment = _when(at)
    # Naive (unparseable) times sort first; aware ones by their instant.
    return (moment.timestamp() if moment.tzinfo is not None else float("-inf"), at or "")


def thin(points: list[dict[str, Any]], max_points: int) -> list[dict[str, Any]]:
    """At most `max_points` of `points`, evenly spaced, the first and the last kept."""
    if len(points) <= max_points:
        return points
    if max_points < 2:
        return points[-1:]
    last = len(points) - 1
    picks = sorted({round(i * last / (max_points - 1)) for i in range(max_points)})
    return [points[i] for i in picks]


def _interval(cs: Interval) -> dict[str, float]:
    return {
        "estimate": round(cs.estimate, 6),
        "lower": round(cs.lower, 6),
        "upper": round(cs.upper, 6),
    }


@dataclass(slots=True)
class _Replay:
    """The running state of one experiment while its samples are replayed."""

    ab: AbDefinition
    moments: dict[str, dict[str, Moments]] = field(default_factory=dict)  # arm -> metric
    sessions: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    arms: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comparisons: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    guards: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def _arm_point(self, at: str, arm: str) -> None:
        self.arms.setdefault(arm, []).append(
            {"at": at, "sessions": self.sessions.get(arm, 0), "turns": self.turns.get(arm, 0)}
        )

    def enroll(self, at: str, arm: str) -> None:
        self.sessions[arm] = self.sessions.get(arm, 0) + 1
        self._arm_point(at, arm)

    def add(self, sample: TurnSample, arm: str) -> None:
        mine = self.moments.setdefault(arm, {})
        for name, value in sample.metrics.items():
            mine.setdefault(name, Moments()).add(value)
        self.turns[arm] = self.turns.get(arm, 0) + 1
        self._arm_point(sample.at, arm)
        need = self.ab.min_samples
        control = self.ab.control_arm
        variants = [arm] if arm != control else [v for v in self.ab.variants if v != control]
        theirs = self.moments.get(control, {})
        for variant in variants:
            ours = self.moments.get(variant, {})
            for metric in METRICS:
                a, b = ours.get(metric), theirs.get(metric)
                if a is None or b is None or min(a.n, b.n) < need:
                    continue
                point = {"at": sample.at, "n": [a.n, b.n], **_interval(difference_sequence(a, b))}
                self.comparisons.setdefault(variant, {}).setdefault(metric, []).append(point)
        for metric in self.ab.guardrails:
            m = mine.get(metric_name(metric))
            if m is not None and m.n >= need:
                point = {"at": sample.at, "n": m.n, **_interval(mean_sequence(m))}
                self.guards.setdefault((arm, metric), []).append(point)


def experiment_timeline(
    name: str, ab: AbDefinition, folds: Iterable[SessionFold], max_points: int = MAX_POINTS
) -> dict[str, Any]:
    """One experiment's series: samples per arm, comparisons, guardrails and pauses."""
    steps: list[tuple[tuple[float, str], int, str, TurnSample | None]] = []
    pauses: dict[str, dict[str, str]] = {}
    for fold in folds:
        arm = fold.assignments.get(name)
        if arm is None:
            continue
        steps.append((_key(fold.started_at), 0, arm, None))
        steps.extend((_key(s.at), 1, arm, s) for s in fold.samples)
        for p in fold.pauses:
            if p.experiment == name and (
                p.variant not in pauses or _key(p.at) < _key(pauses[p.variant]["at"])
            ):
                pauses[p.variant] = {"variant": p.variant, "reason": p.reason, "at": p.at}
    replay = _Replay(ab)
    for (_, at), _kind, arm, sample in sorted(steps, key=lambda s: (s[0], s[1])):
        if sample is None:
            replay.enroll(at, arm)
        else:
            replay.add(sample, arm)
    return {
        "name": name,
        "control": ab.control_arm,
        "minSamples": ab.min_samples,
        "arms": {k: thin(replay.arms.get(k, []), max_points) for k in sorted(ab.variants)},
        "comparisons": {
            variant: {m: thin(points, max_points) for m, points in sorted(metrics.items())}
            for variant, metrics in sorted(replay.comparisons.items())
        },
        "guardrails": [
            {
                "variant": variant,
                "metric": metric,
                "limit": limit,
                "points": thin(replay.guards.get((variant, metric), []), max_points),
            }
            for variant in sorted(ab.variants)
            for metric, limit in ab.guardrails.items()
        ],
        "pauses": [pauses[v] for v in sorted(pauses)],
    }


def timeline(
    defs: Mapping[str, AbDefinition],
    folds: Iterable[SessionFold],
    *,
    experiment: str | None = None,
    max_points: int = MAX_POINTS,
) -> dict[str, Any]:
    """The `GET /v1/abs/timeline` body (every experiment, or the one named)."""
    enrolled = [f for f in folds if f.assignments]
    names = [n for n in sorted(defs) if experiment is None or n == experiment]
    return {
        "experiments": [experiment_timeline(n, defs[n], enrolled, max_points) for n in names],
        "method": METHOD,
    }
