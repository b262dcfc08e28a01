"""SchedulerFunction never loses a firing to one failed attempt (moto server, real event
shapes from events/scheduler/).

Failures are injected at the botocore layer of the store's own DynamoDB client: the first
matching write answers an HTTP 500 `InternalServerError` (botocore does not retry that
code for DynamoDB here, so the store sees it), as a DynamoDB hiccup would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from agentkit.aws.handlers import _common, scheduler
from agentkit.models.scripted import Step, call
from agentkit.scheduling.claims import DONE_TTL
from tests.aws.conftest import FakeContext, Stack, load_event, script
from tests.aws.test_flow import api_call, body_of, event_types
from tests.aws.test_scheduler import firing_of, schedules_in

WRITES = ("PutItem", "UpdateItem", "TransactWriteItems", "DeleteItem")


class FailOnce:
    """Answer the first write that `matches` with a 500, once; later calls go through."""

    def __init__(self, client: Any, matches: Callable[[str, dict[str, Any]], bool]) -> None:
        self.client = client
        self.matches = matches
        self.failed: list[str] = []
        self.armed = False

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> Any:
        name = model.name
        if not self.armed or self.failed or not self.matches(name, params):
            return None
        self.failed.append(name)
        error = {
            "Error": {"Code": "InternalServerError", "Message": "injected failure"},
            "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 0},
        }
        return SimpleNamespace(status_code=500, headers={}), error


@pytest.fixture
def fail_once(aws_stack: Stack) -> Iterator[Callable[..., FailOnce]]:
    client = aws_stack.host.store._caller.client
    made: list[tuple[str, FailOnce]] = []

    def install(matches: Callable[[str, dict[str, Any]], bool]) -> FailOnce:
        hook = FailOnce(client, matches)
        for op in WRITES:
            event = f"before-call.dynamodb.{op}"
            client.meta.events.register_first(event, hook, unique_id=f"fail-once-{op}")
            made.append((event, hook))
        return hook

    yield install
    for event, _hook in made:
        client.meta.events.unregister(event, unique_id=f"fail-once-{event.rsplit('.', 1)[1]}")


def touches(params: dict[str, Any], needle: str) -> bool:
    return needle in repr(params)


def not_claims_or_reminders(name: str, params: dict[str, Any]) -> bool:
    return not touches(params, "claim#") and not touches(params, "'reminder'")


def claim_of(stack: Stack, execution: str) -> Any:
    return _common.run(stack.host.store.get_claim(f"scheduler:{execution}"))


def test_a_schedule_firing_that_failed_once_runs_on_the_retry(
    aws_stack: Stack, fail_once: Callable[..., FailOnce]
) -> None:
    script(aws_stack, Step.text("Today was quiet."))
    event = load_event("scheduler/schedule.json")
    injected = fail_once(not_claims_or_reminders)
    injected.armed = True

    with pytest.raises(Exception, match="injected failure"):
        scheduler.handler(event, FakeContext())  # Lambda reports the error and retries
    assert injected.failed, "no write was failed"
    assert claim_of(aws_stack, event["executionId"]) is None  # released for the retry

    retried = scheduler.handler(event, FakeContext())  # the same delivery, retried
    assert retried["ok"] is True and retried["scheduleId"] == "heartbeat"
    (session_id,) = retried["sessionIds"]
    aws_stack.run_turns()
    assert "turn.completed" in [e.type for e in _common.run(aws_stack.host.store.read(session_id))]

    claim = claim_of(aws_stack, event["executionId"])
    assert claim is not None and claim.state == "done"
    assert scheduler.handler(event, FakeContext()) == {
        "ok": True,
        "duplicate": True,
        "claim": "done",
    }


def test_a_delivery_while_an_attempt_runs_is_turned_away(aws_stack: Stack) -> None:
    event = load_event("scheduler/schedule.json")
    key = f"scheduler:{event['executionId']}"
    assert _common.run(aws_stack.host.store.claim(key, 90.0))  # an attempt is under way
    assert scheduler.handler(event, FakeContext()) == {
        "ok": True,
        "duplicate": True,
        "claim": "started",
    }
    assert aws_stack.dispatcher.payloads == []


def test_a_handler_error_is_recorded_as_such_and_not_rerun(
    aws_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentkit.authoring.schedules import ScheduleDefinition

    calls: list[str] = []

    def broken(ctx: Any) -> None:
        calls.append(ctx.schedule_id)
        raise RuntimeError("the report service said no")

    # The stack's heartbeat schedule, as a handler schedule whose handler raises.
    definition = ScheduleDefinition(cron="0 9 * * 1-5", run=broken)
    dispatcher = aws_stack.host.schedules
    spec = dispatcher.spec("heartbeat").model_copy(update={"kind": "handler"})
    monkeypatch.setattr(dispatcher, "spec", lambda _id: spec)
    monkeypatch.setattr(dispatcher, "_load", lambda _spec: definition)

    event = load_event("scheduler/schedule.json")
    result = scheduler.handler(event, FakeContext())
    assert result["ok"] is False and result["error"] == "schedule_handler_failed"
    assert "the report service said no" in result["message"]
    claim = claim_of(aws_stack, event["executionId"])
    assert claim is not None and claim.state == "failed"
    assert "the report service said no" in (claim.detail or "")
    assert scheduler.handler(event, FakeContext())["duplicate"] is True
    assert calls == ["heartbeat"]  # ran once, never re-run
    assert claim.expires_at > 0 and DONE_TTL > 86400


def test_a_reminder_whose_delivery_failed_is_rearmed_then_delivered(
    aws_stack: Stack, fail_once: Callable[..., FailOnce]
) -> None:
    script(
        aws_stack,
        Step.tool_calls(call("remind_me", {"delay": "20m", "prompt": "Check the build again."})),
        Step.text("I will check back in 20 minutes."),
        Step.text("Checked: the build is green."),
    )
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    aws_stack.run_turns()
    ((name, first),) = schedules_in(aws_stack).items()
    reminder_id = json.loads(first["Target"]["Input"])["reminderId"]

    injected = fail_once(not_claims_or_reminders)
    injected.armed = True
    fired = firing_of(first)
    result = scheduler.handler(fired, FakeContext())
    assert injected.failed, "no write was failed"
    assert result["ok"] is True and result["fired"] is False
    assert "injected failure" in result["error"]

    record = _common.run(aws_stack.host.reminders.get(reminder_id))
    assert record is not None and record.status == "active" and record.failures == 1
    rearmed = schedules_in(aws_stack)[name]
    assert rearmed["ScheduleExpression"] != first["ScheduleExpression"]
    assert rearmed["ScheduleExpression"].startswith("at(")
    assert event_types(aws_stack, session_id).count("message.received") == 1

    again = dict(firing_of(rearmed), executionId="5e0f5a41-9b7a-4d3c-8e21-0c4b7d2f1a99")
    assert scheduler.handler(again, FakeContext())["fired"] is True
    aws_stack.run_turns()
    assert event_types(aws_stack, session_id).count("message.received") == 2
    done = _common.run(aws_stack.host.reminders.get(reminder_id))
    assert done is not None and (done.status, done.failures) == ("done", 0)
