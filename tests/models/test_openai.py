"""The OpenAI adapter against the real SDK and recorded chat completion streams."""

from __future__ import annotations

import openai
import pytest

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models import resolve_model
from agentkit.models.base import (
    AssistantMessage,
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    UserMessage,
)
from agentkit.models.openai import OpenAIModel
from tests.models.common import WEATHER, SleepRecorder, ask, retry_policy
from tests.models.replay import ReplayServer, collect, json_reply, sse


@pytest.fixture
def env(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> ReplayServer:
    """Point the SDK at the replay server the way a user would: with OPENAI_BASE_URL."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return server


def model(sleeps: SleepRecorder | None = None) -> OpenAIModel:
    retry = retry_policy(sleeps)
    return OpenAIModel("gpt-4o", retry=retry)


async def test_text_streams_as_deltas_and_usage_splits_out_cached_tokens(env):
    env.queue(sse("openai_text.sse"))
    chunks = await collect(model().stream(ask()))
    assert chunks == [
        TextDelta("Hello"),
        TextDelta("! How can"),
        TextDelta(" I help today?"),
        Finish("end_turn", Usage(input_tokens=176, output_tokens=18, cache_read_tokens=1024)),
    ]


async def test_argument_fragments_are_assembled_by_index(env):
    env.queue(sse("openai_tool_calls.sse"))
    chunks = await collect(model().stream(ask("Weather and time in Paris?", tools=[WEATHER])))
    assert [c.call for c in chunks if isinstance(c, ToolCallChunk)] == [
        ToolCall("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", {"city": "Paris"}),
        ToolCall("call_ABHCekKtWw4Ta5KCVvM7cUWj", "get_time", {"timezone": "Europe/Paris"}),
    ]
    assert chunks[-1] == Finish("tool_use", Usage(input_tokens=310, output_tokens=52))


async def test_reasoning_content_from_compatible_servers_becomes_reasoning(env):
    env.queue(sse("openai_reasoning_content.sse"))
    chunks = await collect(model().stream(ask("2+2?")))
    assert chunks[:3] == [
        ReasoningDelta("Two plus two "),
        ReasoningDelta("is four."),
        TextDelta("4"),
    ]


async def test_request_asks_for_usage_and_sends_the_conversation_in_wire_shape(env):
    env.queue(sse("openai_text.sse"))
    history = [
        UserMessage("Weather in Paris?"),
        AssistantMessage(
            text="", tool_calls=(ToolCall("call_1", "get_weather", {"city": "Paris"}),)
        ),
        ToolResultMessage("call_1", "get_weather", '{"temp": 21}'),
    ]
    await collect(
        model().stream(ModelRequest(system="Be brief.", messages=history, tools=[WEATHER]))
    )
    sent = env.received[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER.description,
                "parameters": WEATHER.input_schema,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    ]


async def test_server_errors_are_retried_then_succeed(env, sleeps):
    env.queue(
        json_reply(
            429,
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
        ),
        json_reply(503, {"error": {"message": "The server is overloaded", "type": "server_error"}}),
        sse("openai_text.sse"),
    )
    chunks = await collect(model(sleeps).stream(ask()))
    assert isinstance(chunks[-1], Finish)
    assert len(env.received) == 3 and len(sleeps.delays) == 2


async def test_context_length_exceeded_says_the_conversation_is_too_long(env, sleeps):
    env.queue(
        json_reply(
            400,
            {
                "error": {
                    "message": (
                        "This model's maximum context length is 128000 tokens. "
                        "However, your messages resulted in 130512 tokens."
                    ),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
        )
    )
    with pytest.raises(ModelError, match="conversation is too long") as caught:
        await collect(model(sleeps).stream(ask()))
    assert caught.value.status == 400 and not caught.value.retryable and sleeps.delays == []


async def test_a_rejected_key_names_the_variable_to_set(env, sleeps):
    env.queue(
        json_reply(
            401,
            {
                "error": {
                    "message": "Incorrect API key provided: sk-test.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    with pytest.raises(ModelError, match="OPENAI_API_KEY") as caught:
        await collect(model(sleeps).stream(ask()))
    assert caught.value.status == 401


async def test_no_key_and_no_base_url_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError, match="set OPENAI_API_KEY"):
        await collect(resolve_model("openai:gpt-4o").stream(ask()))


async def test_a_compatible_server_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.queue(sse("openai_text.sse"))
    chunks = await collect(resolve_model("openai:llama-3.1-8b").stream(ask()))
    assert isinstance(chunks[-1], Finish)
    assert server.received[0].json()["model"] == "llama-3.1-8b"


async def test_an_injected_client_is_used_as_given(server):
    client = openai.AsyncOpenAI(api_key="sk-injected", base_url=f"{server.url}/v1", max_retries=0)
    server.queue(sse("openai_text.sse"))
    await collect(OpenAIModel("gpt-4o", client=client).stream(ask()))
    assert server.received[0].headers["authorization"] == "Bearer sk-injected"
