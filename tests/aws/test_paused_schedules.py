"""The kill switch on a deployed stack (in-process, moto over HTTP): a schedule that fires
while it is on is held, not run and not lost; the sweep catches it up once it is lifted, by
the schedule's `catch_up` policy; and the API refuses new sessions meanwhile."""

from __future__ import annotations

import uuid

from agentkit.aws.handlers import _common, scheduler
from agentkit.aws.pause_switch import SsmSwitch
from agentkit.models.scripted import Step
from tests.aws.conftest import FakeContext, Stack, load_event, script
from tests.aws.test_flow import api_call, body_of


def switch_of(stack: Stack) -> SsmSwitch:
    switch = SsmSwitch(stack.client("ssm"), f"/agentkit/t{uuid.uuid4().hex[:8]}/paused", cache=0)
    _common.host().runtime.ports.switch = switch
    return switch


def test_a_schedule_fired_while_paused_is_held_then_caught_up(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Today was quiet."))
    switch = switch_of(aws_stack)
    _common.run(switch.set(True, by="ops"))
    held = scheduler.handler(load_event("scheduler/schedule.json"), FakeContext())
    assert held == {"ok": True, "scheduleId": "heartbeat", "held": True, "sessionIds": []}
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 0}
    assert _common.run(aws_stack.host.store.list_sessions(None, limit=10)).items == []

    _common.run(switch.set(False, by="ops"))
    swept = scheduler.handler({"kind": "sweep"}, FakeContext())
    assert swept == {"ok": True, "swept": 0, "caughtUp": 1}  # catch_up "once", the default
    [session] = _common.run(aws_stack.host.store.list_sessions(None, limit=10)).items
    assert session.channel_id == "schedule"
    # Dealt with: a later sweep fires nothing more.
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 0}


def test_the_api_answers_503_while_the_switch_is_on(aws_stack: Stack) -> None:
    switch = switch_of(aws_stack)
    _common.run(switch.set(True, by="ops"))
    refused = api_call("api/create-session.json")
    assert refused["statusCode"] == 503
    assert body_of(refused)["error"] == "agent_paused"
    assert refused["headers"]["retry-after"] == "30"
    _common.run(switch.set(False, by="ops"))
    assert api_call("api/create-session.json")["statusCode"] == 200
