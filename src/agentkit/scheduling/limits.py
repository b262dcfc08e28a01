"""Limits on reminders: the shortest recurring interval, a cap per session, retry backoff.

A reminder wakes a model turn, which costs money and may run tools, so a tool driven by a
prompt must not be able to set a reminder every second, or thousands of them. Defaults:
60 seconds and 50 active reminders per session, changed with the environment variables
`AGENTKIT_REMINDER_MIN_INTERVAL` (a duration: `90s`, `5m`) and
`AGENTKIT_REMINDERS_PER_SESSION`, or by passing `ReminderLimits` to the service. A firing
that finds its session busy tries again a minute later (`AGENTKIT_REMINDER_BUSY_RETRY`).
A one-shot reminder still due half an hour after its time is armed again by the stack's
sweep (`AGENTKIT_REMINDER_OVERDUE_GRACE`): its firing was lost, see
`ReminderService.rearm_overdue`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentkit.cron.standard import next_fire, parse_duration

__all__ = ["ReminderLimits", "delivery_backoff", "shortest_gap"]

MIN_INTERVAL_ENV = "AGENTKIT_REMINDER_MIN_INTERVAL"
PER_SESSION_ENV = "AGENTKIT_REMINDERS_PER_SESSION"
BUSY_RETRY_ENV = "AGENTKIT_REMINDER_BUSY_RETRY"
OVERDUE_GRACE_ENV = "AGENTKIT_REMINDER_OVERDUE_GRACE"
# After this many failed deliveries in a row a reminder is disarmed with its last error.
MAX_DELIVERY_FAILURES = 8
_BACKOFF_BASE = timedelta(minutes=1)
_BACKOFF_CAP = timedelta(hours=1)
_CRON_SAMPLES = 24  # firings looked at to find a cron expression's shortest gap


@dataclass(frozen=True, slots=True)
class ReminderLimits:
    """How often a recurring reminder may fire, how many one session may hold, how long
    a firing that met a busy session waits before it tries again, and how long past its
    time a one-shot may stay due before its firing counts as lost."""

    min_interval: timedelta = timedelta(seconds=60)
    per_session: int = 50
    busy_retry: timedelta = timedelta(seconds=60)
    # Past every attempt of a firing on AWS: Lambda's two retries (about one and two
    # minutes apart) of SchedulerFunction's 5-minute attempts, with a margin.
    overdue_grace: timedelta = timedelta(minutes=30)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ReminderLimits:
        """The defaults, overridden by the environment. A malformed value is a ValueError
        at start-up, never a silently different limit."""
        env = os.environ if environ is None else environ
        limits = cls()
        raw_cap = env.get(PER_SESSION_ENV, "").strip()
        interval = _duration(env, MIN_INTERVAL_ENV, limits.min_interval)
        busy_retry = _duration(env, BUSY_RETRY_ENV, limits.busy_retry)
        overdue_grace = _duration(env, OVERDUE_GRACE_ENV, limits.overdue_grace)
        cap = limits.per_session
        if raw_cap:
            if not raw_cap.isdigit() or int(raw_cap) < 1:
                raise ValueError(f"{PER_SESSION_ENV} must be a positive whole number")
            cap = int(raw_cap)
        return cls(
            min_interval=interval,
            per_session=cap,
            busy_retry=busy_retry,
            overdue_grace=overdue_grace,
        )


def _duration(env: Mapping[str, str], name: str, default: timedelta) -> timedelta:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def shortest_gap(kind: str, spec: str, now: datetime) -> timedelta | None:
    """The shortest time between two firings of a recurring cadence (None for one-shots).

    For cron, the shortest gap among the next firings: `0,1 * * * *` fires a minute apart
    once an hour, and that minute is what counts."""
    if kind == "every":
        return parse_duration(spec)
    if kind != "cron":
        return None
    previous = next_fire(spec, now)
    gap: timedelta | None = None
    for _ in range(_CRON_SAMPLES):
        following = next_fire(spec, previous)
        step = following - previous
        gap = step if gap is None else min(gap, step)
        previous = following
    return gap


def delivery_backoff(failures: int) -> timedelta:
    """How long to wait before delivering again after `failures` failures in a row:
    1, 2, 4 ... minutes, never more than an hour."""
    exponent = max(0, min(failures - 1, 10))
    wait: timedelta = _BACKOFF_BASE * (1 << exponent)
    return min(wait, _BACKOFF_CAP)
