"""`GET /v1/abs/timeline`'s numbers: the report replayed in time order, the band narrowing
as samples come in, and the last point equal to today's readout."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentkit.ab.fold import SessionFold, fold_session
from agentkit.ab.report import Aggregate, experiment_report
from agentkit.ab.timeline import thin, timeline
from agentkit.authoring.ab import define_ab, variant
from agentkit.events import Event

AB = define_ab(
    name="model",
    variants={"control": variant(), "pricey": variant()},
    guardrails={"costUsd": 0.015},
    min_samples=5,
)
START = datetime(2026, 3, 1, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def session(n: int, arm: str, costs: list[float], t0: float, paused: bool = False) -> SessionFold:
    """One enrolled session whose turns cost `costs`, one turn a minute from `t0`."""
    sid = f"ses_timeline{n:08d}"
    events: list[Event] = [
        Event("session.started", 0, sid, stamp(t0), {"channelId": "http", "mode": "chat"}),
        Event("ab.assigned", 1, sid, stamp(t0), {"experiment": "model", "variant": arm}),
    ]
    for k, cost in enumerate(costs):
        turn, at = f"turn_{k}", t0 + 60 * (k + 1)
        i = len(events)
        events.append(Event("message.received", i, sid, stamp(at - 2), {"message": "hi"}, turn))
        events.append(Event("turn.completed", i + 1, sid, stamp(at), {"costUsd": cost}, turn))
    if paused:
        data = {"experiment": "model", "variant": arm, "reason": "guardrail costUsd"}
        events.append(Event("ab.paused", len(events), sid, stamp(t0 + 600), data))
    return fold_session(sid, events)


def seeded() -> list[SessionFold]:
    """40 sessions of 5 turns; "pricey" costs about $0.02 a turn, "control" $0.01."""
    rng = random.Random(41)
    folds = []
    for n in range(40):
        arm = "pricey" if n % 2 else "control"
        mean = 0.02 if arm == "pricey" else 0.01
        costs = [max(0.0, rng.gauss(mean, 0.004)) for _ in range(5)]
        folds.append(session(n, arm, costs, t0=n * 97.0, paused=(n == 13)))
    # Listed out of time order, as a store may list them: the replay sorts.
    rng.shuffle(folds)
    return folds


def width(point: dict[str, Any]) -> float:
    return float(point["upper"] - point["lower"])


def test_the_band_narrows_and_ends_at_the_readout() -> None:
    folds = seeded()
    body = timeline({"model": AB}, folds, max_points=1000)
    (x,) = body["experiments"]
    points = x["comparisons"]["pricey"]["costUsd"]
    assert [p["at"] for p in points] == sorted(p["at"] for p in points)
    # Nothing before both arms have `min_samples` turns, then one point per turn.
    assert min(points[0]["n"]) == AB.min_samples
    assert points[-1]["n"] == [100, 100]
    assert len(points) == 200 - sum(points[0]["n"]) + 1
    # The band narrows as samples come in: each quarter of the series is narrower.
    quarters = [points[i * (len(points) - 1) // 4] for i in range(5)]
    widths = [width(p) for p in quarters]
    assert widths == sorted(widths, reverse=True), widths
    assert widths[-1] < widths[0] / 3
    # It starts around zero's neighbourhood and ends excluding it (pricey costs more).
    assert points[-1]["lower"] > 0
    # The last point is today's readout of `GET /v1/abs`.
    readout = experiment_report("model", AB, Aggregate.of(folds))["comparisons"]["pricey"]
    final = points[-1]
    assert final["estimate"] == pytest.approx(readout["costUsd"]["difference"], abs=1e-6)
    assert final["lower"] == pytest.approx(readout["costUsd"]["lower"], abs=1e-6)
    assert final["upper"] == pytest.approx(readout["costUsd"]["upper"], abs=1e-6)
    assert readout["costUsd"]["status"] == "higher"


def test_arms_guardrails_and_pauses_over_time() -> None:
    folds = seeded()
    (x,) = timeline({"model": AB}, folds, max_points=1000)["experiments"]
    report = experiment_report("model", AB, Aggregate.of(folds))
    for arm in ("control", "pricey"):
        series = x["arms"][arm]
        assert series[-1] == {
            "at": series[-1]["at"],
            "sessions": report["arms"][arm]["sessions"],
            "turns": report["arms"][arm]["turns"],
        }
        # Cumulative counts: never going down.
        assert all(a["turns"] <= b["turns"] for a, b in itertools.pairwise(series))
    guard = {(g["variant"], g["metric"]): g for g in x["guardrails"]}
    pricey = guard[("pricey", "costUsd")]
    assert pricey["limit"] == 0.015
    rows = {(r["variant"], r["metric"]): r for r in report["guardrails"]}
    assert pricey["points"][-1]["lower"] == pytest.approx(rows[("pricey", "costUsd")]["lower"])
    assert pricey["points"][-1]["lower"] > 0.015  # surely over the limit by the end
    assert x["pauses"] == [
        {"variant": "pricey", "reason": "guardrail costUsd", "at": stamp(13 * 97.0 + 600)}
    ]


def test_series_are_thinned_to_max_points_keeping_the_last() -> None:
    folds = seeded()
    full = timeline({"model": AB}, folds, max_points=1000)["experiments"][0]
    short = timeline({"model": AB}, folds, max_points=20)["experiments"][0]
    a, b = full["comparisons"]["pricey"]["costUsd"], short["comparisons"]["pricey"]["costUsd"]
    assert len(b) == 20
    assert b[0] == a[0] and b[-1] == a[-1]
    assert thin([{"i": i} for i in range(3)], 2) == [{"i": 0}, {"i": 2}]


def test_an_experiment_without_sessions_has_empty_series() -> None:
    (x,) = timeline({"model": AB}, [], experiment="model")["experiments"]
    assert x["comparisons"] == {} and x["pauses"] == []
    assert x["arms"] == {"control": [], "pricey": []}
    assert [g["points"] for g in x["guardrails"]] == [[], []]
