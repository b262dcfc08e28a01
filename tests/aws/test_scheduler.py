"""SchedulerFunction and the EventBridge Scheduler adapters, against the moto server.

moto stores schedules but never fires them: the tests check the schedules it holds, then
invoke SchedulerFunction with the payload the schedule carries, as Scheduler would."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from agentkit.aws.handlers import _common, scheduler
from agentkit.aws.timer import EventBridgeTimer
from agentkit.models.scripted import Step, call
from agentkit.scheduling.timer import Recurrence, reminder_key
from tests.aws.conftest import ROLE_ARN, TARGET_ARN, FakeContext, Stack, load_event, script
from tests.aws.test_flow import api_call, body_of, event_types


def schedules_in(stack: Stack) -> dict[str, dict[str, Any]]:
    client = stack.client("scheduler")
    names = [
        s["Name"]
        for s in client.list_schedules(GroupName=stack.settings.schedule_group)["Schedules"]
    ]
    return {n: client.get_schedule(Name=n, GroupName=stack.settings.schedule_group) for n in names}


def firing_of(schedule: dict[str, Any]) -> dict[str, Any]:
    """The event Scheduler hands SchedulerFunction when a reminder's `at()` schedule
    fires: events/scheduler/reminder.json with that schedule's reminder and time, and an
    execution id of its own, as each firing has."""
    event = load_event("scheduler/reminder.json")
    event["executionId"] = str(uuid.uuid4())
    event["reminderId"] = json.loads(schedule["Target"]["Input"])["reminderId"]
    expression = schedule["ScheduleExpression"]
    assert expression.startswith("at("), expression
    event["scheduledTime"] = expression.removeprefix("at(").removesuffix(")") + "Z"
    return event


def test_schedule_firing_starts_a_task_session(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Today was quiet."))
    result = scheduler.handler(load_event("scheduler/schedule.json"), FakeContext())
    assert result["ok"] is True and result["scheduleId"] == "heartbeat"
    (session_id,) = result["sessionIds"]
    aws_stack.run_turns()
    types = [e.type for e in _common.run(aws_stack.host.store.read(session_id))]
    assert "turn.completed" in types
    assert types[-1] == "session.completed"


def test_redelivered_schedule_execution_runs_once(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Once."))
    event = load_event("scheduler/schedule.json")
    first = scheduler.handler(event, FakeContext())
    second = scheduler.handler(event, FakeContext())
    assert len(first["sessionIds"]) == 1
    assert second == {"ok": True, "duplicate": True, "claim": "done"}


def test_reminder_created_by_a_tool_is_armed_and_fires(aws_stack: Stack) -> None:
    script(
        aws_stack,
        Step.tool_calls(call("remind_me", {"delay": "20m", "prompt": "Check the build again."})),
        Step.text("I will check back in 20 minutes."),
        Step.text("Checked: the build is green."),
    )
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    aws_stack.run_turns()
    armed = schedules_in(aws_stack)
    (name,) = armed
    schedule = armed[name]
    assert name.startswith("reminder-")
    assert schedule["ScheduleExpression"].startswith("at(")
    assert schedule["ActionAfterCompletion"] == "DELETE"
    payload = json.loads(schedule["Target"]["Input"])
    assert payload["kind"] == "reminder"
    assert schedule["Target"]["Arn"] == TARGET_ARN

    fired = firing_of(schedule)
    assert fired["reminderId"] == payload["reminderId"]
    assert scheduler.handler(fired, FakeContext())["ok"] is True
    aws_stack.run_turns()
    types = event_types(aws_stack, session_id)
    assert types.count("message.received") == 2
    assert types.count("turn.completed") == 2


def lost_turn_record(session_id: str, turn_id: str) -> dict[str, Any]:
    """The record Lambda sends TurnFunction's on-failure destination (SchedulerFunction)
    when it gives up on the turn's invocation."""
    return {
        "version": "1.0",
        "timestamp": "2026-11-29T20:15:00.000Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-xmpl-8880-a18cdf61200e",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:agentkit-turn:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
        "requestPayload": {"sessionId": session_id, "turnId": turn_id},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": {"errorMessage": "Task timed out after 900.00 seconds"},
    }


def test_lost_turn_is_recorded_as_failed(aws_stack: Stack) -> None:
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    turn_id = aws_stack.dispatcher.payloads.pop()["turnId"]  # the invocation never ran
    destination_record = lost_turn_record(session_id, turn_id)
    result = scheduler.handler(destination_record, FakeContext())
    assert result["recorded"] is True
    events = [
        json.loads(x)
        for x in api_call(
            "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
        )["body"].splitlines()
    ]
    failed = [e for e in events if e["type"] == "turn.failed"]
    assert len(failed) == 1
    assert "RetriesExhausted" in failed[0]["data"]["error"]
    assert "timed out" in failed[0]["data"]["error"]
    # a second destination record for the same turn changes nothing
    assert scheduler.handler(destination_record, FakeContext())["recorded"] is False


def test_a_message_queued_behind_a_lost_turn_runs_once_it_is_failed(aws_stack: Stack) -> None:
    """A follow-up queued while TurnFunction was still retrying runs once Lambda gives up
    and the turn is failed, not when the next sweep happens to look."""
    script(aws_stack, Step.text("After the lost one."))
    created = body_of(api_call("api/create-session.json"))
    session_id, token = created["sessionId"], created["continuationToken"]
    turn_id = aws_stack.dispatcher.payloads.pop()["turnId"]  # its worker keeps dying
    queued = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{session_id}",
        body={"continuationToken": token, "message": "Still there?", "onBusy": "queue"},
    )
    assert queued["statusCode"] == 200, queued
    assert event_types(aws_stack, session_id).count("message.queued") == 1
    assert aws_stack.dispatcher.payloads == []  # behind the open turn, not dispatched
    assert scheduler.handler(lost_turn_record(session_id, turn_id), FakeContext())["recorded"]
    aws_stack.run_turns()
    types = event_types(aws_stack, session_id)
    assert types.count("turn.failed") == 1
    assert types.count("message.received") == 2
    assert types[-2:] == ["turn.completed", "session.waiting"]


# -- the timer on its own -----------------------------------------------------------------


@pytest.fixture
def timer(aws_stack: Stack) -> EventBridgeTimer:
    return aws_stack.host.timer


async def test_one_shot_is_an_at_schedule_deleted_after_completion(
    aws_stack: Stack, timer: EventBridgeTimer
) -> None:
    when = datetime.now(UTC) + timedelta(hours=2)
    await timer.arm(reminder_key("rem_one"), when)
    schedule = schedules_in(aws_stack)["reminder-rem_one"]
    assert schedule["ScheduleExpression"] == f"at({when.strftime('%Y-%m-%dT%H:%M:%S')})"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["Target"]["RoleArn"] == ROLE_ARN


async def test_recurring_reminders_use_rate_and_cron(
    aws_stack: Stack, timer: EventBridgeTimer
) -> None:
    now = datetime.now(UTC)
    first = now + timedelta(minutes=30)
    await timer.arm(reminder_key("rem_every"), first, recurrence=Recurrence("every", "30m"))
    await timer.arm(reminder_key("rem_cron"), now, recurrence=Recurrence("cron", "0 9 * * 1-5"))
    held = schedules_in(aws_stack)
    assert held["reminder-rem_every"]["ScheduleExpression"] == "rate(30 minutes)"
    assert held["reminder-rem_cron"]["ScheduleExpression"] == "cron(0 9 ? * 2-6 *)"
    assert held["reminder-rem_every"].get("ActionAfterCompletion") in (None, "NONE")
    assert (
        held["reminder-rem_every"]["StartDate"] == first.replace(microsecond=0)
        or abs((held["reminder-rem_every"]["StartDate"] - first).total_seconds()) < 1
    )


async def test_rearming_a_recurring_reminder_keeps_its_schedule(
    aws_stack: Stack, timer: EventBridgeTimer
) -> None:
    now = datetime.now(UTC)
    every = Recurrence("every", "1h")
    await timer.arm(reminder_key("rem_r"), now, recurrence=every)
    before = schedules_in(aws_stack)["reminder-rem_r"]
    await timer.arm(reminder_key("rem_r"), now + timedelta(hours=1), recurrence=every)
    after = schedules_in(aws_stack)["reminder-rem_r"]
    assert after["ScheduleExpression"] == before["ScheduleExpression"] == "rate(1 hour)"
    assert after.get("LastModificationDate") == before.get("LastModificationDate")


async def test_cancel_deletes_the_schedule(aws_stack: Stack, timer: EventBridgeTimer) -> None:
    await timer.arm(reminder_key("rem_gone"), datetime.now(UTC) + timedelta(minutes=5))
    await timer.disarm(reminder_key("rem_gone"))
    await timer.disarm(reminder_key("rem_gone"))  # twice is fine
    assert "reminder-rem_gone" not in schedules_in(aws_stack)


# -- deploy-time reconciliation (the custom resource) -------------------------------------


class _Responses(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_PUT(self) -> None:
        length = int(self.headers["content-length"])
        type(self).received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def cfn_endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback stand-in for CloudFormation's pre-signed response URL."""
    received: list[dict[str, Any]] = []
    handler = type("Responses", (_Responses,), {"received": received})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/response", received
    finally:
        server.shutdown()
        server.server_close()


def _cfn_event(stack: Stack, url: str, request_type: str) -> dict[str, Any]:
    event = load_event("scheduler/reconcile-update.json")
    event["RequestType"] = request_type
    event["ResponseURL"] = url
    event["ResourceProperties"]["ScheduleGroup"] = stack.settings.schedule_group
    return event


def _with_schedules(stack: Stack, schedules: list[dict[str, Any]]) -> None:
    manifest = stack.host.bundle.manifest
    specs = [type(manifest.schedules[0]).model_validate(s) for s in schedules]
    stack.host.bundle.manifest = manifest.model_copy(update={"schedules": specs})


def test_deploy_makes_the_group_equal_the_manifest(
    aws_stack: Stack, cfn_endpoint: tuple[str, list[dict[str, Any]]]
) -> None:
    url, responses = cfn_endpoint
    timer = aws_stack.host.timer
    reminder_at = datetime.now(UTC) + timedelta(hours=1)
    _common.run(timer.arm(reminder_key("rem_keep"), reminder_at))

    scheduler.handler(_cfn_event(aws_stack, url, "Create"), FakeContext())
    held = schedules_in(aws_stack)
    assert held["schedule-heartbeat"]["ScheduleExpression"] == "cron(0 9 ? * 2-6 *)"
    assert json.loads(held["schedule-heartbeat"]["Target"]["Input"])["scheduleId"] == "heartbeat"
    assert responses[-1]["Status"] == "SUCCESS"

    # the next deploy changes heartbeat's cron, adds nightly, and the reminder stays
    source = "agent/schedules/heartbeat.md"
    _with_schedules(
        aws_stack,
        [
            {"id": "heartbeat", "cron": "30 8 * * *", "kind": "markdown", "source": source},
            {"id": "nightly", "cron": "0 2 * * *", "kind": "markdown", "source": source},
        ],
    )
    result = scheduler.handler(_cfn_event(aws_stack, url, "Update"), FakeContext())
    assert result["created"] == ["schedule-nightly"] and result["updated"] == ["schedule-heartbeat"]
    held = schedules_in(aws_stack)
    assert held["schedule-heartbeat"]["ScheduleExpression"] == "cron(30 8 * * ? *)"
    assert set(held) == {"schedule-heartbeat", "schedule-nightly", "reminder-rem_keep"}

    # a deploy that removes one deletes it; an unchanged one is left alone
    _with_schedules(
        aws_stack,
        [{"id": "nightly", "cron": "0 2 * * *", "kind": "markdown", "source": source}],
    )
    result = scheduler.handler(_cfn_event(aws_stack, url, "Update"), FakeContext())
    assert result["deleted"] == ["schedule-heartbeat"] and result["unchanged"] == [
        "schedule-nightly"
    ]
    assert set(schedules_in(aws_stack)) == {"schedule-nightly", "reminder-rem_keep"}

    scheduler.handler(_cfn_event(aws_stack, url, "Delete"), FakeContext())
    assert set(schedules_in(aws_stack)) == {"reminder-rem_keep"}
    assert [r["Status"] for r in responses] == ["SUCCESS"] * 4
    assert {r["LogicalResourceId"] for r in responses} == {"ManifestSchedules"}


def test_the_sweep_schedule_redispatches_a_turn_whose_invocation_was_lost(
    aws_stack: Stack,
) -> None:
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    turn_id = aws_stack.dispatcher.payloads.pop()["turnId"]  # the invocation never arrived
    # Not quiet for a lease TTL yet: left alone.
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 0}
    _common.host().runtime.lease_ttl = 0.0  # as if a TTL had passed
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 1}
    assert aws_stack.dispatcher.payloads[-1] == {"sessionId": session_id, "turnId": turn_id}
