"""Trials and verdicts: one run of a case says little when the model is not deterministic.

A case runs `n` times (or, with "auto", only while its outcome is undecided) and ends:

- `passed` every trial passed;
- `failed` every trial failed (an error counts as a failure);
- `flaky` some passed and some failed: the pass rate and its 95% Wilson interval say how
  flaky.

`auto` runs two trials, then keeps adding one while the outcomes disagree and the Wilson
interval is wider than `AUTO_WIDTH`, up to the cap. Two agreeing trials settle it, so a
stable case costs two runs; one mixed result buys more trials until the rate is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["AUTO_WIDTH", "Verdict", "needs_more", "verdict", "wilson"]

Z95 = 1.959963984540054
AUTO_WIDTH = 0.5  # stop adding trials once the 95% interval is at most this wide
Verdict = Literal["passed", "flaky", "failed"]


def wilson(passes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate (`(0, 1)` with no trials)."""
    if trials <= 0:
        return 0.0, 1.0
    p = passes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def verdict(passes: int, trials: int) -> Verdict:
    if trials and passes == trials:
        return "passed"
    if passes == 0:
        return "failed"
    return "flaky"


def needs_more(passes: int, trials: int, cap: int) -> bool:
    """Whether `auto` runs another trial after `passes` of `trials`."""
    if trials >= cap:
        return False
    if trials < 2:
        return True
    if passes in (0, trials):
        return False  # agreeing outcomes: stable
    low, high = wilson(passes, trials)
    return high - low > AUTO_WIDTH


@dataclass(frozen=True, slots=True)
class TrialSummary:
    """The pass rate of a case's trials, with its interval."""

    passes: int
    trials: int

    @property
    def rate(self) -> float:
        return self.passes / self.trials if self.trials else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passes, self.trials)

    @property
    def verdict(self) -> Verdict:
        return verdict(self.passes, self.trials)
