"""A SchedulerFunction attempt that dies mid-firing (a crash, a timeout) leaves its claim
`started`. Lambda's retry of that attempt (the same request id, a minute later) must fire
the reminder, unless the dead attempt had already delivered it. Through the handler, with
the real event shape from events/scheduler/, on the DynamoDB store (moto server)."""

from __future__ import annotations

from typing import Any

import pytest

from agentkit.aws.handlers import _common, scheduler
from agentkit.models.scripted import Step, call
from tests.aws.conftest import FakeContext, Stack, script
from tests.aws.test_flow import api_call, body_of, event_types
from tests.aws.test_scheduler import firing_of, schedules_in


class Killed(BaseException):
    """The invocation's process dying: nothing after it runs (no release, no settle)."""


def due_reminder(stack: Stack) -> tuple[str, dict[str, Any]]:
    """A session with a reminder a tool set; its session id and the firing's event."""
    script(
        stack,
        Step.tool_calls(call("remind_me", {"delay": "20m", "prompt": "Check the build again."})),
        Step.text("I will check back in 20 minutes."),
        Step.text("Checked: the build is green."),
    )
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    stack.run_turns()
    ((_, first),) = schedules_in(stack).items()
    return session_id, firing_of(first)


def die_during(
    stack: Stack,
    monkeypatch: pytest.MonkeyPatch,
    event: dict[str, Any],
    context: FakeContext,
    *,
    after_delivery: bool,
) -> None:
    """Run one attempt that dies before (or just after) the reminder's message is
    recorded, leaving what a dead invocation leaves: a started claim."""
    reminders = stack.host.reminders
    real_fire = reminders.fire

    async def dying_fire(reminder_id: str, **_: Any) -> Any:
        if after_delivery:
            record = await reminders.get(reminder_id)
            assert record is not None and record.session_id is not None
            await stack.host.runtime.deliver(
                record.session_id, "Check the build again.", source="reminder"
            )
        raise Killed()

    async def no_release(key: str) -> None:
        return None  # the process is gone: it releases nothing

    with monkeypatch.context() as patch:
        patch.setattr(reminders, "fire", dying_fire)
        patch.setattr(stack.host.store, "release_claim", no_release)
        with pytest.raises(Killed):
            scheduler.handler(event, context)
    assert reminders.fire == real_fire
    claim = _common.run(stack.host.store.get_claim(f"scheduler:{event['executionId']}"))
    assert claim is not None and claim.state == "started"


def test_lambdas_retry_of_an_attempt_that_died_early_fires_the_reminder(
    aws_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, event = due_reminder(aws_stack)
    context = FakeContext()
    die_during(aws_stack, monkeypatch, event, context, after_delivery=False)
    assert event_types(aws_stack, session_id).count("message.received") == 1

    retried = scheduler.handler(event, FakeContext(aws_request_id=context.aws_request_id))
    assert retried["ok"] is True and retried.get("fired") is True, retried
    aws_stack.run_turns()
    assert event_types(aws_stack, session_id).count("message.received") == 2
    # And the firing is now done: another delivery of it does nothing.
    again = scheduler.handler(event, FakeContext(aws_request_id=context.aws_request_id))
    assert again == {"ok": True, "duplicate": True, "claim": "done"}


def test_another_delivery_while_the_attempt_may_still_run_is_turned_away(
    aws_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, event = due_reminder(aws_stack)
    die_during(aws_stack, monkeypatch, event, FakeContext(), after_delivery=False)
    # A second delivery by Scheduler is another invocation (another request id): the
    # first attempt may still be running, so it waits for the claim to lapse.
    other = scheduler.handler(event, FakeContext())
    assert other == {"ok": True, "duplicate": True, "claim": "started"}
    assert event_types(aws_stack, session_id).count("message.received") == 1


def test_a_retry_after_the_dead_attempt_delivered_does_not_deliver_again(
    aws_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, event = due_reminder(aws_stack)
    context = FakeContext()
    die_during(aws_stack, monkeypatch, event, context, after_delivery=True)
    assert event_types(aws_stack, session_id).count("message.received") == 2

    retried = scheduler.handler(event, FakeContext(aws_request_id=context.aws_request_id))
    assert retried == {"ok": True, "duplicate": True, "claim": "done"}
    assert event_types(aws_stack, session_id).count("message.received") == 2
