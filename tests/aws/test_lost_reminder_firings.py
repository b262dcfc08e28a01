"""A one-shot reminder whose firing was lost for good: every SchedulerFunction attempt
failed, Lambda sent the record to the failure queue, and the `at()` schedule had already
deleted itself. The stack's sweep arms it again; a late retry of the lost firing does not
deliver it a second time. Through the handlers, on the DynamoDB store (moto server)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agentkit.aws.handlers import _common, scheduler
from agentkit.cron.standard import format_instant
from agentkit.models.scripted import Step, call
from agentkit.reminders import ReminderRecord
from tests.aws.conftest import FakeContext, Stack, script
from tests.aws.test_flow import api_call, body_of, event_types
from tests.aws.test_scheduler import firing_of, schedules_in

SWEEP = {"kind": "sweep"}


def lost_firing(stack: Stack, *, due_ago: timedelta) -> tuple[str, ReminderRecord, dict[str, Any]]:
    """A session whose reminder came due `due_ago` and whose firing never got through:
    its session id, its record, and the event of that lost firing."""
    script(
        stack,
        Step.tool_calls(call("remind_me", {"delay": "20m", "prompt": "Check the build again."})),
        Step.text("I will check back in 20 minutes."),
        Step.text("Checked: the build is green."),
    )
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    stack.run_turns()
    ((name, schedule),) = schedules_in(stack).items()
    reminders = stack.host.reminders
    record = _common.run(reminders.get(firing_of(schedule)["reminderId"]))
    assert record is not None
    due = datetime.now(UTC) - due_ago
    overdue = replace(record, next_fire_at=format_instant(due))
    _common.run(stack.host.store.put_reminder(overdue))
    # Scheduler deleted the at() schedule when it fired; the firing then failed for good.
    stack.client("scheduler").delete_schedule(Name=name, GroupName=stack.settings.schedule_group)
    lost = firing_of(schedule)
    lost["scheduledTime"] = due.strftime("%Y-%m-%dT%H:%M:%SZ")
    return session_id, overdue, lost


def test_the_sweep_arms_again_a_one_shot_whose_firing_was_lost(aws_stack: Stack) -> None:
    session_id, record, _ = lost_firing(aws_stack, due_ago=timedelta(hours=1))
    answer = scheduler.handler(SWEEP, FakeContext())
    assert answer["remindersRearmed"] == [record.id]
    ((_, again),) = schedules_in(aws_stack).items()
    assert again["ScheduleExpression"].startswith("at(")

    fired = scheduler.handler(firing_of(again), FakeContext())
    assert fired["fired"] is True, fired
    aws_stack.run_turns()
    assert event_types(aws_stack, session_id).count("message.received") == 2
    done = _common.run(aws_stack.host.reminders.get(record.id))
    assert done is not None and (done.status, done.fire_count) == ("done", 1)
    # Done: the next sweep has nothing to arm.
    assert "remindersRearmed" not in scheduler.handler(SWEEP, FakeContext())


def test_a_late_retry_of_the_lost_firing_is_superseded(aws_stack: Stack) -> None:
    session_id, _, lost = lost_firing(aws_stack, due_ago=timedelta(hours=1))
    scheduler.handler(SWEEP, FakeContext())
    late = scheduler.handler(lost, FakeContext())
    assert late["fired"] is False and late["superseded"] is True, late
    assert event_types(aws_stack, session_id).count("message.received") == 1

    ((_, again),) = schedules_in(aws_stack).items()
    assert scheduler.handler(firing_of(again), FakeContext())["fired"] is True
    aws_stack.run_turns()
    assert event_types(aws_stack, session_id).count("message.received") == 2


def test_a_reminder_delivered_by_a_firing_that_died_is_counted_not_delivered_again(
    aws_stack: Stack,
) -> None:
    session_id, record, _ = lost_firing(aws_stack, due_ago=timedelta(hours=1))
    # The attempt delivered the message, then died before it updated the record.
    _common.run(
        aws_stack.host.runtime.deliver(session_id, "Check the build again.", source="reminder")
    )
    aws_stack.run_turns()
    answer = scheduler.handler(SWEEP, FakeContext())
    assert "remindersRearmed" not in answer
    assert schedules_in(aws_stack) == {}
    assert event_types(aws_stack, session_id).count("message.received") == 2
    done = _common.run(aws_stack.host.reminders.get(record.id))
    assert done is not None and (done.status, done.fire_count) == ("done", 1)


def test_another_reminders_message_does_not_count_as_this_ones(aws_stack: Stack) -> None:
    session_id, record, _ = lost_firing(aws_stack, due_ago=timedelta(hours=1))
    _common.run(aws_stack.host.runtime.deliver(session_id, "Water the plants.", source="reminder"))
    aws_stack.run_turns()
    assert scheduler.handler(SWEEP, FakeContext())["remindersRearmed"] == [record.id]


def test_a_firing_still_within_its_retries_is_left_alone(aws_stack: Stack) -> None:
    _, record, _ = lost_firing(aws_stack, due_ago=timedelta(minutes=5))
    assert "remindersRearmed" not in scheduler.handler(SWEEP, FakeContext())
    assert schedules_in(aws_stack) == {}
    kept = _common.run(aws_stack.host.reminders.get(record.id))
    assert kept == record
