"""Context windows: each provider's table, the default, and the test model's enforcement."""

from __future__ import annotations

import asyncio

import pytest

from agentkit import define_agent
from agentkit.errors import ModelError
from agentkit.models import resolve_model
from agentkit.models.base import ModelRequest, UserMessage
from agentkit.models.scripted import ScriptedModel
from agentkit.models.test import TestModel
from agentkit.models.windows import DEFAULT_WINDOW, model_window, request_tokens


@pytest.mark.parametrize(
    ("model_id", "window"),
    [
        ("anthropic:claude-sonnet-4-5", 200_000),
        ("anthropic:claude-some-future-model", 200_000),
        ("openai:gpt-4o-mini", 128_000),
        ("openai:gpt-4.1-mini", 1_047_576),
        ("openai:gpt-4", 8_192),
        ("openai:not-a-model-we-know", DEFAULT_WINDOW),
        ("bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000),
        ("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
        ("bedrock:amazon.nova-micro-v1:0", 128_000),
        ("test", 200_000),
    ],
)
def test_each_provider_knows_the_windows_of_its_models(model_id: str, window: int) -> None:
    assert model_window(resolve_model(model_id)) == window


def test_a_model_that_names_no_window_gets_the_default() -> None:
    assert model_window(ScriptedModel([])) == DEFAULT_WINDOW


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context_window": 0}, "context_window must be a positive whole number"),
        ({"context_window": "4k"}, "context_window must be a positive whole number"),
        ({"context_window": True}, "context_window must be a positive whole number"),
        ({"compaction": "truncate"}, "compaction must be summarize, window or off"),
        ({"compact_at": 1.5}, "compact_at must be a share of the window"),
        ({"compact_at": 0}, "compact_at must be a share of the window"),
        ({"max_tool_result_tokens": -1}, "max_tool_result_tokens must be a positive"),
        ({"compaction_model": ""}, "compaction_model must be a model id"),
    ],
)
def test_define_agent_rejects_bad_context_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        define_agent(**options)


def test_define_agent_keeps_good_context_options() -> None:
    agent = define_agent(context_window=8000, compaction="window", compact_at=0.5)
    assert agent.options["context_window"] == 8000


def _request(chars: int, window: int | None) -> ModelRequest:
    return ModelRequest(system="", messages=[UserMessage("x" * chars)], context_window=window)


async def _drain(request: ModelRequest) -> list[object]:
    return [chunk async for chunk in TestModel().stream(request)]


def test_the_test_model_refuses_a_request_past_the_declared_window() -> None:
    request = _request(4004, 1000)
    assert request_tokens(request) == 1001
    with pytest.raises(ModelError) as caught:
        asyncio.run(_drain(request))
    assert str(caught.value) == "prompt is too long: 1001 tokens > 1000 maximum"
    assert caught.value.retryable is False
    assert caught.value.status == 400


def test_the_test_model_takes_a_request_at_the_window_or_with_none_declared() -> None:
    assert asyncio.run(_drain(_request(4000, 1000)))
    assert asyncio.run(_drain(_request(400_000, None)))
