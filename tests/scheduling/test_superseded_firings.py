"""A late firing of a one-shot reminder that was armed again since (by a busy retry, a
delivery backoff or the overdue sweep) is superseded: the firing of the time it is armed
for now delivers it. A recurring reminder's ticks are never superseded."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from agentkit.cron.standard import format_instant
from agentkit.reminders import ReminderRecord
from agentkit.scheduling._firing import superseded
from agentkit.scheduling.limits import OVERDUE_GRACE_ENV, ReminderLimits

AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
ONE_SHOT = ReminderRecord(
    id="rem_x",
    purpose="follow_up",
    channel_id="http",
    continuation_token="session:ses_x",
    kind="delay",
    spec="20m",
    next_fire_at=format_instant(AT + timedelta(minutes=1)),
)


def test_a_firing_of_a_time_the_one_shot_was_armed_past_is_superseded() -> None:
    assert superseded(ONE_SHOT, AT)


def test_the_firing_of_the_armed_time_is_not_superseded() -> None:
    assert not superseded(ONE_SHOT, AT + timedelta(minutes=1))
    # Scheduler's at() has whole seconds; the record may carry a fraction of one.
    fraction = replace(ONE_SHOT, next_fire_at=format_instant(AT + timedelta(seconds=0.6)))
    assert not superseded(fraction, AT)


def test_a_recurring_reminders_tick_is_never_superseded() -> None:
    assert not superseded(replace(ONE_SHOT, kind="every", spec="1h"), AT)
    assert not superseded(replace(ONE_SHOT, kind="cron", spec="0 * * * *"), AT)


def test_the_overdue_grace_is_half_an_hour_unless_set() -> None:
    assert ReminderLimits.from_env({}).overdue_grace == timedelta(minutes=30)
    set_ = ReminderLimits.from_env({OVERDUE_GRACE_ENV: "45s"})
    assert set_.overdue_grace == timedelta(seconds=45)
