"""A three-tool session to fork: weather, then a sum, then a deploy parked on approval.

`policy` answers every model request from the conversation alone, so one model serves the
original and any number of forks, whatever point each continues from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agentkit.engine.runtime import AgentRuntime
from agentkit.models.base import Message, ModelRequest, ToolResultMessage, UserMessage
from agentkit.models.scripted import ScriptedModel, Step, call

from .conftest import ALICE, settle

# DynamoDB on the moto server: each test records a session and forks it over HTTP.
STORES = [
    "files",
    pytest.param("dynamodb", marks=pytest.mark.slow(reason="moto answers one request at a time")),
]


def policy(request: ModelRequest) -> Step:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        if last.text == "weather and a sum":
            return Step.tool_calls(call("get_weather", {"city": "Paris"}))
        if last.text == "ship it":
            return Step.tool_calls(call("deploy", {"env": "prod"}, id="d1"))
        return Step.text(f"continued after {len(request.messages)} messages")
    assert isinstance(last, ToolResultMessage)
    if last.tool_name == "get_weather":
        return Step.tool_calls(call("add", {"a": 2, "b": 3}))
    if last.tool_name == "add":
        return Step.text("Sunny in Paris, and 2 + 3 = " + last.content)
    return Step.text(("denied: " if last.is_error else "shipped: ") + last.content)


def policy_model() -> ScriptedModel:
    return ScriptedModel([Step.respond(policy)] * 2000)


async def recorded_session(rt: AgentRuntime, *, approve: bool = True) -> str:
    """The original: two turns over three tools, the last call parked (then approved)."""
    first = await rt.start_session("weather and a sum", principal=ALICE)
    await settle(rt)
    await rt.follow_up(first.session_id, first.continuation_token, "ship it", principal=ALICE)
    await settle(rt)
    if approve:
        await rt.resolve_approval(first.session_id, "d1", "approve", principal=ALICE)
        await settle(rt)
    return first.session_id


def results_shape(messages: Sequence[Message]) -> list[Any]:
    """The conversation, with the text of error results left out: a call left open by a
    cut gets whichever error its session recorded (missing, abandoned)."""
    out: list[Any] = []
    for m in messages:
        if isinstance(m, ToolResultMessage) and m.is_error:
            out.append(("error result", m.call_id, m.tool_name))
        else:
            out.append(m)
    return out
