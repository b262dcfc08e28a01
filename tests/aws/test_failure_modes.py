"""Deployed failure modes moto never produces: a custom resource whose reconciliation AWS
refuses, and a cold start between parking an approval and resolving it."""

from __future__ import annotations

import json
from typing import Any

from agentkit.aws.clients import client as cached_client
from agentkit.aws.handlers import _common, api, scheduler
from agentkit.aws.host import AwsHost
from agentkit.models.scripted import Step, call
from agentkit.project.bundle import AgentBundle
from tests.aws.conftest import CapturingDispatcher, FakeContext, Stack, script
from tests.aws.test_flow import api_call, body_of
from tests.aws.test_scheduler import _cfn_event, cfn_endpoint, schedules_in
from tests.fixtures.botocore_faults import Faults

__all__ = ["cfn_endpoint"]  # the fixture, shared with test_scheduler.py


def test_a_refused_reconciliation_reports_failed_to_cloudformation(
    aws_stack: Stack, cfn_endpoint: tuple[str, list[dict[str, Any]]]
) -> None:
    url, responses = cfn_endpoint
    faults = Faults(aws_stack.client("scheduler"))
    faults.error("CreateSchedule", "AccessDeniedException", status=403)

    result = scheduler.handler(_cfn_event(aws_stack, url, "Create"), FakeContext())

    assert result == {"ok": False}
    assert faults.injected["CreateSchedule"] == 1
    (response,) = responses  # exactly one answer, so the stack neither hangs nor doubles
    assert response["Status"] == "FAILED"
    assert "AccessDeniedException" in response["Reason"]
    # the same physical id a success would give: CloudFormation must not see a replacement
    group = aws_stack.settings.schedule_group
    assert response["PhysicalResourceId"] == f"{group}-schedules"
    assert schedules_in(aws_stack) == {}

    # the next deploy, with the permission back, converges
    scheduler.handler(_cfn_event(aws_stack, url, "Update"), FakeContext())
    assert responses[-1]["Status"] == "SUCCESS"
    assert set(schedules_in(aws_stack)) == {"schedule-heartbeat"}


def test_a_refused_delete_reports_failed_and_keeps_the_schedules(
    aws_stack: Stack, cfn_endpoint: tuple[str, list[dict[str, Any]]]
) -> None:
    url, responses = cfn_endpoint
    scheduler.handler(_cfn_event(aws_stack, url, "Create"), FakeContext())
    Faults(aws_stack.client("scheduler")).error(
        "DeleteSchedule", "AccessDeniedException", status=403
    )

    assert scheduler.handler(_cfn_event(aws_stack, url, "Delete"), FakeContext()) == {"ok": False}

    assert [r["Status"] for r in responses] == ["SUCCESS", "FAILED"]
    assert set(schedules_in(aws_stack)) == {"schedule-heartbeat"}


def _cold_start(stack: Stack) -> None:
    """A new Lambda execution environment: new clients, a new host, no module caches."""
    cached_client.cache_clear()
    settings = stack.settings
    dispatcher = CapturingDispatcher()
    model = stack.model
    stack.host = AwsHost(
        settings,
        bundle=AgentBundle.load_built(settings.build_dir),
        clients=lambda service: cached_client(service, settings),
        dispatcher=dispatcher,
        runtime_options={"model_resolver": lambda _id: model, "lease_ttl": 30.0},
    )
    stack.dispatcher = dispatcher
    _common.use_host(stack.host)
    api.reset()


def _events(session_id: str) -> list[dict[str, Any]]:
    response = api_call(
        "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
    )
    assert response["statusCode"] == 200, response
    return [json.loads(line) for line in response["body"].splitlines() if line]


def test_an_approval_parked_before_a_cold_start_resolves_after_it(aws_stack: Stack) -> None:
    script(
        aws_stack,
        Step.tool_calls(call("deploy", {"env": "prod"}, id="call_deploy")),
        Step.text("Deployed."),
    )
    first_host = aws_stack.host
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    aws_stack.run_turns()
    assert [e["type"] for e in _events(session_id)].count("action.approval_requested") == 1

    _cold_start(aws_stack)
    assert aws_stack.host is not first_host

    pending = api_call("api/stream.json", path=f"/v1/session/{session_id}/approvals", query="")
    assert [a["callId"] for a in body_of(pending)["approvals"]] == ["call_deploy"]
    resolved = api_call(
        "api/approval.json",
        path=f"/v1/session/{session_id}/approvals/call_deploy",
        body={"decision": "approve"},
    )
    assert resolved["statusCode"] == 200, resolved
    assert len(aws_stack.dispatcher.payloads) == 1  # the new host dispatched the resume
    aws_stack.run_turns()

    events = _events(session_id)
    types = [e["type"] for e in events]
    results = [e for e in events if e["type"] == "action.result"]
    # the tool ran once, after the cold start, with the parked arguments
    assert len(results) == 1 and results[0]["data"].get("isError") is not True
    assert types.count("action.approval_resolved") == 1
    assert types.count("turn.completed") == 1
    assert aws_stack.model.remaining == 0
    # a second approval of the same call, on yet another cold start, changes nothing
    _cold_start(aws_stack)
    again = api_call(
        "api/approval.json",
        path=f"/v1/session/{session_id}/approvals/call_deploy",
        body={"decision": "approve"},
    )
    assert again["statusCode"] in {404, 409}, again
    aws_stack.run_turns()
    assert len([e for e in _events(session_id) if e["type"] == "action.result"]) == 1
