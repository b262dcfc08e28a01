"""Anytime-valid comparisons: mixture-SPRT confidence sequences, and the SRM check.

People read `/v1/abs` after every turn. A fixed-horizon interval read that often finds
"winners" that are noise. These intervals are confidence *sequences*: with probability at
least 1 - alpha they contain the true value at every sample size at once, so reading them
continuously (and stopping whenever) keeps the error rate.

The method is the normal-mixture sequential probability ratio test (mSPRT, Johari, Pekelis
and Walsh, "Always valid inference", 2017) inverted into a confidence sequence. For an
estimate with variance V and a normal mixing distribution N(0, tau^2) over the effect, the
mixture likelihood ratio against a value theta is

    Lambda(theta) = sqrt(V / (V + tau^2)) * exp(tau^2 (est - theta)^2 / (2 V (V + tau^2)))

and the sequence is every theta with Lambda(theta) < 1/alpha:

    |est - theta| < sqrt( V (V + tau^2) / tau^2 * (2 ln(1/alpha) + ln((V + tau^2) / V)) )

V is estimated from the samples (s_a^2/n_a + s_b^2/n_b for a difference of means, s^2/n
for one mean), which makes the guarantee asymptotic (Waudby-Smith et al., "Time-uniform
central limit theory", 2024): below `min_samples` per arm nothing is reported. tau^2 is
rho^2 times the per-sample variance, with rho^2 chosen so the sequence is tightest near
`tuned_n` samples per arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALPHA = 0.05
TUNED_N = 100
SRM_P_THRESHOLD = 0.001


@dataclass(slots=True)
class Moments:
    """Count, mean and sum of squared deviations (Welford), mergeable."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    total: float = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    @property
    def variance(self) -> float:
        """The sample variance (n - 1 denominator); 0 below two samples."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0


def rho_squared(alpha: float = ALPHA, tuned_n: int = TUNED_N) -> float:
    """The mixing scale that makes the boundary tightest at `tuned_n` samples."""
    a = 2 * math.log(1 / alpha)
    return (a + math.log(a + 1)) / tuned_n


def mixture_radius(v: float, tau2: float, alpha: float = ALPHA) -> float:
    """Half-width of the mSPRT confidence sequence for an estimate with variance `v`."""
    if v <= 0:
        return 0.0
    return math.sqrt(v * (v + tau2) / tau2 * (2 * math.log(1 / alpha) + math.log((v + tau2) / v)))


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    lower: float
    upper: float


def mean_sequence(m: Moments, alpha: float = ALPHA, tuned_n: int = TUNED_N) -> Interval:
    """The confidence sequence for one arm's mean."""
    s2 = m.variance
    v = s2 / m.n if m.n else 0.0
    r = mixture_radius(v, rho_squared(alpha, tuned_n) * s2, alpha) if s2 > 0 else 0.0
    return Interval(m.mean, m.mean - r, m.mean + r)


def difference_sequence(
    treatment: Moments, control: Moments, alpha: float = ALPHA, tuned_n: int = TUNED_N
) -> Interval:
    """The confidence sequence for mean(treatment) - mean(control)."""
    sa, sb = treatment.variance, control.variance
    v = sa / treatment.n + sb / control.n
    tau2 = rho_squared(alpha, tuned_n) * (sa + sb)
    est = treatment.mean - control.mean
    r = mixture_radius(v, tau2, alpha) if tau2 > 0 else 0.0
    return Interval(est, est - r, est + r)


# ---- sample ratio mismatch ---------------------------------------------------------


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma Q(a, x) (series / continued fraction)."""
    if x <= 0:
        return 1.0
    gln = math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(1000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + a * math.log(x) - gln))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - gln) * h


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-squared variable with `df` degrees of freedom."""
    return _gamma_q(df / 2, x / 2)


@dataclass(frozen=True, slots=True)
class SrmCheck:
    chi_squared: float
    p_value: float
    flagged: bool
    observed: dict[str, int]
    expected: dict[str, float]

    def wire(self) -> dict[str, object]:
        return {
            "chiSquared": round(self.chi_squared, 6),
            "pValue": self.p_value,
            "flagged": self.flagged,
            "observed": self.observed,
            "expected": {k: round(v, 3) for k, v in self.expected.items()},
            "threshold": SRM_P_THRESHOLD,
        }


def srm_check(
    observed: Mapping[str, int], weights: Mapping[str, float], arms: Sequence[str] | None = None
) -> SrmCheck | None:
    """Chi-squared test of the assignment counts against the weights (None without data).

    A p-value under 0.001 flags a broken split: something other than chance is deciding
    who lands in which arm (a crash in one arm, a filter, a bot), and the comparison above
    it cannot be trusted.
    """
    names = list(arms or weights)
    counts = {k: int(observed.get(k, 0)) for k in names}
    n = sum(counts.values())
    if n == 0 or len(names) < 2:
        return None
    total_w = sum(weights[k] for k in names)
    expected = {k: n * weights[k] / total_w for k in names}
    stat = sum((counts[k] - expected[k]) ** 2 / expected[k] for k in names if expected[k] > 0)
    p = chi2_sf(stat, len(names) - 1)
    return SrmCheck(stat, p, p < SRM_P_THRESHOLD, counts, expected)


__all__ = [
    "ALPHA",
    "Interval",
    "Moments",
    "SrmCheck",
    "chi2_sf",
    "difference_sequence",
    "mean_sequence",
    "mixture_radius",
    "rho_squared",
    "srm_check",
]
