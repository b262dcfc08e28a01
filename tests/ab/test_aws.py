"""The A/B fold on AWS: HooksFunction folds the stream into the snapshot (moto server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tests.aws.conftest as aws_conftest
from agentkit.ab.fold import fold_session
from agentkit.ab.report import Aggregate
from agentkit.aws.handlers import api, hooks
from agentkit.events import Usage
from agentkit.models.scripted import Step
from tests.aws.conftest import FakeContext, Stack, aws_stack, load_event, script  # noqa: F401

pytestmark = pytest.mark.slow(reason="runs experiments on a DynamoDB-API server")

AB = """
    from agentkit import define_ab, variant

    ab = define_ab(
        name="tone",
        variants={"control": variant(), "concise": variant(instructions="Be brief.")},
    )
"""


@pytest.fixture
def with_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The AWS test agent plus an experiment (set before `aws_stack` builds it)."""
    monkeypatch.setattr(
        aws_conftest, "AGENT_FILES", {**aws_conftest.AGENT_FILES, "agent/ab.py": AB}
    )


def create(message: str) -> str:
    event = load_event("api/create-session.json")
    event["body"] = json.dumps({"message": message})
    response = api.handler(event, FakeContext())
    assert response["statusCode"] == 200, response
    return str(json.loads(response["body"])["sessionId"])


def get_abs() -> dict[str, Any]:
    event = load_event("api/stream.json")
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/abs"
    event["rawQueryString"] = ""
    event.pop("queryStringParameters", None)
    response = api.handler(event, FakeContext())
    assert response["statusCode"] == 200, response
    body: dict[str, Any] = json.loads(response["body"])
    return body


def test_the_stream_handler_keeps_the_ab_snapshot(
    with_experiment: None,
    aws_stack: Stack,  # noqa: F811
) -> None:
    sessions = []
    for i in range(6):
        script(
            aws_stack, Step.text(f"answer {i}", usage=Usage(input_tokens=10 + i, output_tokens=3))
        )
        sessions.append(create(f"question {i}"))
        aws_stack.run_turns()
    records = aws_stack.stream_records()
    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}
    # Lambda retries a batch: nothing may be counted twice.
    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}

    store = aws_stack.host.store
    import asyncio

    async def independent() -> Aggregate:
        return Aggregate.of([fold_session(s, await store.read(s)) for s in sessions])

    expected = asyncio.run(independent())
    snap = asyncio.run(aws_stack.host._read_ab_snapshot())
    arms = expected.arms["tone"]
    assert sum(a.sessions for a in arms.values()) == 6
    for variant, want in arms.items():
        got = snap.arms["tone"][variant]
        assert got.sessions == want.sessions
        assert got.turns == want.turns
        for metric in ("inputTokens", "outputTokens", "completed", "steps"):
            assert got.metrics[metric].total == pytest.approx(want.metrics[metric].total)
            assert got.metrics[metric].variance == pytest.approx(want.metrics[metric].variance)
    # The route answers from the snapshot.
    body = get_abs()
    tone = body["experiments"][0]
    for variant, want in arms.items():
        assert tone["arms"][variant]["sessions"] == want.sessions
        assert tone["arms"][variant]["totals"]["inputTokens"] == pytest.approx(
            want.metrics["inputTokens"].total
        )
    assert len(body["sessions"]) == 6


GUARDED = """
    from agentkit import define_ab, variant

    ab = define_ab(
        name="tone",
        variants={"control": variant(weight=1), "concise": variant(weight=3)},
        guardrails={"inputTokens": 20},
        min_samples=2,
    )
"""


@pytest.fixture
def with_guardrail(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {**aws_conftest.AGENT_FILES, "agent/ab.py": GUARDED}
    monkeypatch.setattr(aws_conftest, "AGENT_FILES", files)


def test_the_stream_handler_pauses_a_breaching_variant(
    with_guardrail: None,
    aws_stack: Stack,  # noqa: F811
) -> None:
    import asyncio

    sessions = []
    for i in range(12):
        script(aws_stack, Step.text(f"answer {i}", usage=Usage(input_tokens=50, output_tokens=1)))
        sessions.append(create(f"question {i}"))
        aws_stack.run_turns()
    records = aws_stack.stream_records()
    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}
    snap = asyncio.run(aws_stack.host._read_ab_snapshot())
    assert list(snap.paused.get("tone", {})) == ["concise"]
    store = aws_stack.host.store

    async def pauses() -> list[dict[str, Any]]:
        out = []
        for s in sessions:
            out += [e.data for e in await store.read(s) if e.type == "ab.paused"]
        return out

    recorded = asyncio.run(pauses())
    assert len(recorded) == 1 and recorded[0]["variant"] == "concise"
    assert "inputTokens" in recorded[0]["reason"]
    # From now on the API function enrolls new sessions in control only.
    for i in range(8):
        sid = create(f"later {i}")
        arms = [e.data["variant"] for e in asyncio.run(store.read(sid)) if e.type == "ab.assigned"]
        assert arms == ["control"]
    assert get_abs()["experiments"][0]["paused"] == {"concise": recorded[0]["reason"]}
