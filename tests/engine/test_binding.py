"""`agent.bound`: recorded once per session, naming the agent, its runtime and its URLs."""

from __future__ import annotations

import pytest

from agentkit.events import AgentBound
from agentkit.models.scripted import Step

from .conftest import ALICE, Env, check_vocabulary, settle


async def test_a_new_session_records_agent_bound_once(env: Env) -> None:
    rt = env.runtime([Step.text("one"), Step.text("two")])
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    await rt.follow_up(acc.session_id, acc.continuation_token, "again", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert [e.type for e in events[:3]] == ["session.started", "message.received", "agent.bound"]
    assert [e.type for e in events].count("agent.bound") == 1
    bound = events[2]
    assert bound.turn_id is None  # it belongs to the session, not to its first turn
    payload = bound.as_(AgentBound)
    sid = acc.session_id
    assert (payload.agent_id, payload.runtime, payload.function_name) == ("proj", "local", None)
    assert payload.url == f"/v1/session/{sid}"
    assert payload.urls == {
        "session": f"/v1/session/{sid}",
        "stream": f"/v1/session/{sid}/stream",
        "events": f"/v1/session/{sid}/events",
        "playground": f"/playground?sessionId={sid}",
    }


async def test_a_session_bound_inside_lambda_says_so(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "weather-ApiFunction-1A2B")
    rt = env.runtime([Step.text("hi")])
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    [bound] = [e for e in await rt.store.read(acc.session_id) if e.type == "agent.bound"]
    assert bound.data["runtime"] == "lambda"
    assert bound.data["functionName"] == "weather-ApiFunction-1A2B"
