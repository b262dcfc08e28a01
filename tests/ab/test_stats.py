"""The confidence sequences against a reference, an A/A test read after every turn, SRM."""

from __future__ import annotations

import math
import random

import pytest

from agentkit.ab.fold import TurnSample
from agentkit.ab.report import Aggregate, breaches
from agentkit.ab.stats import (
    ALPHA,
    Moments,
    chi2_sf,
    difference_sequence,
    mean_sequence,
    mixture_radius,
    rho_squared,
    srm_check,
)
from agentkit.authoring.ab import AbDefinition, define_ab, variant


def reference_radius(v: float, tau2: float, alpha: float) -> float:
    """The mSPRT boundary from its definition: integrate the normal-mixture likelihood
    ratio numerically and find where it reaches 1/alpha by bisection."""
    tau = math.sqrt(tau2)
    grid = 4001
    lo_d, hi_d = -12 * tau, 12 * tau
    h = (hi_d - lo_d) / (grid - 1)

    def log_ratio(gap: float) -> float:
        # log of the trapezoid sum of N(d; 0, tau2) * LR(d), in log space (no overflow)
        logs = []
        for k in range(grid):
            d = lo_d + k * h
            log_weight = -d * d / (2 * tau2) - 0.5 * math.log(2 * math.pi * tau2)
            log_lr = (d * gap) / v - d * d / (2 * v)
            trap = math.log(0.5) if k in (0, grid - 1) else 0.0
            logs.append(log_weight + log_lr + trap)
        top = max(logs)
        return top + math.log(sum(math.exp(x - top) for x in logs)) + math.log(h)

    lo, hi = 0.0, 50 * math.sqrt(v + tau2)
    for _ in range(60):
        mid = (lo + hi) / 2
        if log_ratio(mid) < math.log(1 / alpha):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@pytest.mark.parametrize(
    ("v", "tau2", "alpha"), [(0.01, 0.05, 0.05), (0.002, 0.01, 0.05), (0.5, 0.2, 0.1)]
)
def test_radius_matches_the_reference(v: float, tau2: float, alpha: float) -> None:
    assert mixture_radius(v, tau2, alpha) == pytest.approx(
        reference_radius(v, tau2, alpha), rel=1e-3
    )


def test_difference_sequence_uses_both_arms() -> None:
    a, b = Moments(), Moments()
    rng = random.Random(7)
    for _ in range(200):
        a.add(rng.gauss(1.0, 1.0))
        b.add(rng.gauss(0.0, 2.0))
    cs = difference_sequence(a, b)
    v = a.variance / a.n + b.variance / b.n
    tau2 = rho_squared() * (a.variance + b.variance)
    assert cs.estimate == pytest.approx(a.mean - b.mean)
    assert cs.upper - cs.estimate == pytest.approx(reference_radius(v, tau2, ALPHA), rel=1e-3)
    assert cs.lower > 0  # a real difference of 1 shows after 200 samples each


def test_a_a_test_stays_within_its_error_rate_when_read_after_every_turn() -> None:
    """200 A/A experiments of 400 turns per arm, read after every turn from 30 samples on:
    the share that ever claims a difference stays near alpha. A fixed-horizon 95% interval
    read the same way is fooled far more often, which is why the sequence is used."""
    rng = random.Random(20261130)
    experiments, turns, minimum = 200, 400, 30
    sequential_false = naive_false = 0
    for _ in range(experiments):
        a, b = Moments(), Moments()
        seq_hit = naive_hit = False
        for t in range(turns):
            a.add(rng.expovariate(50.0))  # cost-like, skewed: mean $0.02 per turn
            b.add(rng.expovariate(50.0))
            if t + 1 < minimum:
                continue
            cs = difference_sequence(a, b)
            seq_hit = seq_hit or cs.lower > 0 or cs.upper < 0
            se = math.sqrt(a.variance / a.n + b.variance / b.n)
            naive_hit = naive_hit or abs(a.mean - b.mean) > 1.96 * se
        sequential_false += seq_hit
        naive_false += naive_hit
    assert sequential_false / experiments <= ALPHA + 0.03, sequential_false
    assert naive_false / experiments > 0.15, naive_false  # peeking breaks a fixed test


def test_mean_sequence_covers_the_truth() -> None:
    rng = random.Random(3)
    misses = 0
    for _ in range(200):
        m = Moments()
        for _ in range(100):
            m.add(rng.gauss(5.0, 2.0))
        cs = mean_sequence(m)
        misses += not (cs.lower <= 5.0 <= cs.upper)
    assert misses <= 200 * (ALPHA + 0.03)


def test_chi_squared_tail() -> None:
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-6)
    assert chi2_sf(5.991464547107979, 2) == pytest.approx(0.05, rel=1e-6)
    assert chi2_sf(7.814727903251178, 3) == pytest.approx(0.05, rel=1e-6)
    assert chi2_sf(30.0, 1) == pytest.approx(math.erfc(math.sqrt(15.0)), rel=1e-6)


def test_srm_flags_a_skewed_split_only() -> None:
    skewed = srm_check({"control": 600, "treatment": 400}, {"control": 1, "treatment": 1})
    assert skewed is not None and skewed.flagged
    assert skewed.chi_squared == pytest.approx(40.0)
    fair = srm_check({"control": 505, "treatment": 495}, {"control": 1, "treatment": 1})
    assert fair is not None and not fair.flagged
    weighted = srm_check({"a": 250, "b": 750}, {"a": 1, "b": 3})
    assert weighted is not None and not weighted.flagged and weighted.chi_squared == 0
    assert srm_check({}, {"a": 1, "b": 1}) is None


def _guarded(limit: float) -> dict[str, AbDefinition]:
    ab = define_ab(
        name="cost",
        variants={"control": variant(), "treatment": variant()},
        guardrails={"costPerTurn": limit},
        min_samples=10,
    )
    return {"cost": ab}


def _paused_after(
    defs: dict[str, AbDefinition], rng: random.Random, mean: float, turns: int
) -> int:
    """Feed noisy per-turn costs of `mean` to the treatment arm, checking the guardrail
    after every turn; the turn it first breached at, or 0 when it never did."""
    agg = Aggregate()
    for t in range(turns):
        cost = rng.expovariate(1 / mean)
        agg.add(TurnSample("s", f"t{t}", {"cost": "treatment"}, "", {"costUsd": cost}))
        if breaches(agg, defs):
            return t + 1
    return 0


def test_a_guardrail_pauses_on_the_sequence_not_on_a_noisy_mean() -> None:
    """A cost guardrail read after every turn: an arm truly under its limit is (almost)
    never paused, although its running mean goes over the limit often; an arm truly over
    it is paused, and only once the sequence's lower bound has crossed the limit."""
    limit = 0.01
    defs = _guarded(limit)
    rng = random.Random(11)
    false_pauses = naive = 0
    for _ in range(100):
        agg = Aggregate()
        crossed = False
        for t in range(300):
            cost = rng.expovariate(1 / 0.008)  # mean $0.008: under the limit
            agg.add(TurnSample("s", f"t{t}", {"cost": "treatment"}, "", {"costUsd": cost}))
            m = agg.arms["cost"]["treatment"].metrics["costUsd"]
            crossed = crossed or (m.n >= 10 and m.mean > limit)
            if breaches(agg, defs):
                false_pauses += 1
                break
        naive += crossed
    assert false_pauses <= 100 * ALPHA, false_pauses
    assert naive > 20, naive  # a plain "mean over the limit" rule would have paused these

    at = [_paused_after(defs, rng, 0.03, 500) for _ in range(20)]
    assert all(n > 0 for n in at), at  # three times the limit is always caught
    [breach] = breaches(_fed(0.03, 500), defs)
    assert breach.variant == "treatment" and breach.lower > limit
    assert "costPerTurn <= 0.01 breached" in breach.reason


def _fed(mean: float, turns: int) -> Aggregate:
    rng = random.Random(5)
    agg = Aggregate()
    for t in range(turns):
        cost = rng.expovariate(1 / mean)
        agg.add(TurnSample("s", f"t{t}", {"cost": "treatment"}, "", {"costUsd": cost}))
    return agg
