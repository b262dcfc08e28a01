"""Event timestamps: `now_iso` writes what `iso_utc` would, and its cached date part
follows the clock from one second to the next."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from agentkit.events import iso_utc, now_iso
from agentkit.events import wire as events


def at(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr(events, "time", SimpleNamespace(time_ns=lambda: ns))


def expected(ns: int) -> str:
    return iso_utc(datetime.fromtimestamp(ns // 1000 / 1_000_000, UTC))


def test_now_iso_is_iso_utc_of_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = 1_764_538_225_123_999_999  # 2025-11-30T21:30:25.123999999Z: truncated to .123
    at(monkeypatch, ns)
    assert now_iso() == expected(ns) == "2025-11-30T21:30:25.123Z"


def test_now_iso_moves_to_the_next_second(monkeypatch: pytest.MonkeyPatch) -> None:
    before = 1_764_538_225_999_000_000
    at(monkeypatch, before)
    assert now_iso() == "2025-11-30T21:30:25.999Z"
    after = before + 1_000_000  # one millisecond later, in the next second
    at(monkeypatch, after)
    assert now_iso() == expected(after) == "2025-11-30T21:30:26.000Z"


def test_now_iso_follows_a_clock_that_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    at(monkeypatch, 1_764_538_226_500_000_000)
    now_iso()
    earlier = 1_764_451_825_007_000_000  # a day earlier (the system clock was corrected)
    at(monkeypatch, earlier)
    assert now_iso() == expected(earlier) == "2025-11-29T21:30:25.007Z"


def test_now_iso_reads_the_real_clock() -> None:
    low = iso_utc(datetime.now(UTC))
    stamp = now_iso()
    high = iso_utc(datetime.now(UTC))
    assert low <= stamp <= high
