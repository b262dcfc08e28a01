"""Eval runs on AWS, through the Lambda handlers with API Gateway events under moto.

`POST /v1/dev/evals/runs` on ApiFunction stores the run's snapshot in DynamoDB and hands
the run to TurnFunction as an asynchronous invocation (captured here, as Lambda would
queue it): no case runs inside the API request. TurnFunction's handler then runs the
cases and the snapshot, polled over the API, ends `completed`. A repeated invocation of
the same run does nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentkit.aws.handlers import api, turn
from tests.aws import conftest
from tests.aws.conftest import FakeContext, Stack, load_event

EVALS = {
    "evals/evals.config.py": """
        from agentkit import define_evals_config

        config = define_evals_config(max_concurrency=1)
    """,
    "evals/greets.eval.py": """
        from agentkit.evals import define_eval

        case = define_eval(message="hi", tags=["quick"])
    """,
    "evals/zebra.eval.py": """
        from agentkit.evals import define_eval, reply_contains

        case = define_eval(message="hi", tags=["quick"], assertions=[reply_contains("a zebra")])
    """,
}


@pytest.fixture
def aws_stack(with_evals: None, aws_stack: Stack) -> Iterator[Stack]:
    """The shared stack, its agent project written with two eval cases."""
    yield aws_stack


@pytest.fixture
def with_evals(monkeypatch: pytest.MonkeyPatch) -> None:
    for rel, text in EVALS.items():
        monkeypatch.setitem(conftest.AGENT_FILES, rel, text)


def request(method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    event = copy.deepcopy(load_event("api/create-session.json"))
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    if body is None:
        event.pop("body", None)
        event["headers"].pop("content-length", None)
    else:
        event["body"] = json.dumps(body)
        event["headers"]["content-length"] = str(len(event["body"]))
    response = api.handler(event, FakeContext())
    return response["statusCode"], json.loads(response["body"])


def test_a_run_is_stored_and_handed_to_the_turn_function(aws_stack: Stack) -> None:
    status, started = request("POST", "/v1/dev/evals/runs", {"tags": ["quick"]})
    assert status == 202, started
    run_id = started["runId"]
    assert started["status"] == "running"
    # Handed off, not run: one async invocation queued, every case still pending.
    assert aws_stack.dispatcher.payloads == [{"kind": "evalRun", "runId": run_id}]
    assert [c["status"] for c in started["cases"]] == ["pending", "pending"]

    status, busy = request("POST", "/v1/dev/evals/runs", {})
    assert status == 409 and busy["error"] == "eval_run_active"
    status, listed = request("GET", "/v1/dev/evals/runs")
    assert status == 200 and listed["activeRunId"] == run_id

    # The snapshot is a DynamoDB item in the state table.
    item = aws_stack.client("dynamodb").get_item(
        TableName=aws_stack.settings.sessions_table,
        Key={"pk": {"S": "evalrun"}, "sk": {"S": run_id}},
        ConsistentRead=True,
    )["Item"]
    assert json.loads(item["record"]["S"])["status"] == "running"

    repeat = dict(aws_stack.dispatcher.payloads[0])
    [result] = aws_stack.run_turns()  # TurnFunction's handler, as Lambda delivers it
    assert result == {"ok": True, "runId": run_id, "ran": True}

    status, done = request("GET", f"/v1/dev/evals/runs/{run_id}")
    assert status == 200
    assert done["status"] == "completed" and done["ok"] is False
    assert done["counts"] == {"passed": 1, "flaky": 0, "failed": 1, "error": 0}
    by_id = {c["id"]: c for c in done["cases"]}
    assert by_id["greets"]["status"] == "passed"
    assert by_id["zebra"]["status"] == "failed"
    assert "a zebra" in by_id["zebra"]["failures"][0]
    assert by_id["greets"]["sessionId"].startswith("ses_") and "cost" in by_id["greets"]

    # Lambda delivers at least once: the repeat finds the run taken and changes nothing.
    assert turn.handler(repeat, FakeContext()) == {"ok": True, "runId": run_id, "ran": False}
    status, again = request("GET", f"/v1/dev/evals/runs/{run_id}")
    assert again == done
    status, listed = request("GET", "/v1/dev/evals/runs")
    assert "activeRunId" not in listed and [r["runId"] for r in listed["runs"]] == [run_id]

    status, second = request("POST", "/v1/dev/evals/runs", {"filterIds": ["greets"]})
    assert status == 202 and second["runId"] != run_id


def test_bad_eval_run_requests(aws_stack: Stack) -> None:
    assert request("POST", "/v1/dev/evals/runs", {"tags": ["none"]})[0] == 404
    assert request("POST", "/v1/dev/evals/runs", {"filterIds": "greets"})[0] == 400
    assert request("GET", "/v1/dev/evals/runs/run_0000000000000000")[0] == 404
    assert request("GET", "/v1/dev/evals/runs/..%2Fsecret")[0] == 404
    assert aws_stack.dispatcher.payloads == []
    assert turn.handler({"kind": "evalRun"}, FakeContext())["ok"] is False
    unknown = turn.handler({"kind": "evalRun", "runId": "run_nope"}, FakeContext())
    assert unknown == {"ok": True, "runId": "run_nope", "ran": False}
