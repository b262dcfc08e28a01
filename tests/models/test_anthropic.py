"""The Anthropic adapter against the real SDK and recorded Messages API streams."""

from __future__ import annotations

import anthropic
import pytest

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models import resolve_model
from agentkit.models._retry import RetryPolicy
from agentkit.models.anthropic import AnthropicModel
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
from tests.models.common import WEATHER, SleepRecorder, ask, retry_policy
from tests.models.replay import ReplayServer, collect, json_reply, sse


def model(
    server: ReplayServer, sleeps: SleepRecorder | None = None, **kwargs: object
) -> AnthropicModel:
    client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)
    retry = retry_policy(sleeps)
    return AnthropicModel("claude-sonnet-4-5", client=client, retry=retry, **kwargs)  # type: ignore[arg-type]


def key_sent(headers: dict[str, str]) -> str:
    # SDK versions differ on the header that carries the key.
    return headers.get("x-api-key") or headers.get("authorization", "")


async def test_text_and_thinking_stream_as_deltas_with_the_signature_at_block_end(server):
    server.queue(sse("anthropic_thinking_text.sse"))
    chunks = await collect(model(server).stream(ask()))
    assert chunks == [
        ReasoningDelta("The user greets me. "),
        ReasoningDelta("A short friendly answer fits."),
        ReasoningDelta("", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
        TextDelta("Hello"),
        TextDelta("! How can"),
        TextDelta(" I help today?"),
        Finish(
            "end_turn",
            Usage(
                input_tokens=472, output_tokens=41, cache_read_tokens=2048, cache_write_tokens=1024
            ),
        ),
    ]


async def test_fragmented_tool_input_is_assembled_into_complete_calls(server):
    server.queue(sse("anthropic_tool_use.sse"))
    chunks = await collect(model(server).stream(ask("Weather in Paris and Oslo?", tools=[WEATHER])))
    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert calls == [
        ToolCall(
            "toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Paris", "unit": "celsius"}
        ),
        ToolCall("toolu_01B7xTQ2d8CkqAVf3kP9L1mz", "get_weather", {"city": "Oslo"}),
    ]
    assert chunks[-1] == Finish("tool_use", Usage(input_tokens=512, output_tokens=89))


async def test_request_carries_system_tools_and_the_conversation_in_wire_shape(server):
    server.queue(sse("anthropic_thinking_text.sse"))
    history = [
        UserMessage("Weather in Paris?"),
        AssistantMessage(
            text="Checking.",
            reasoning="Need the tool.",
            reasoning_signature="sig-1",
            tool_calls=(ToolCall("toolu_1", "get_weather", {"city": "Paris"}),),
        ),
        ToolResultMessage("toolu_1", "get_weather", '{"temp": 21}'),
        ToolResultMessage("toolu_2", "get_weather", "city not found", is_error=True),
    ]
    request = ModelRequest(system="Be brief.", messages=history, tools=[WEATHER], max_tokens=500)
    await collect(model(server, thinking_budget=1024).stream(request))
    sent = server.received[0]
    assert sent.path == "/v1/messages"
    assert "sk-ant-test" in key_sent(sent.headers)
    body = sent.json()
    assert body["stream"] is True
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"][0]["text"] == "Be brief."
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "input_schema": WEATHER.input_schema,
        }
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 1524
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need the tool.", "signature": "sig-1"},
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": '{"temp": 21}',
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "city not found",
                    "is_error": True,
                },
            ],
        },
    ]


async def test_unsigned_reasoning_is_not_sent_back(server):
    server.queue(sse("anthropic_thinking_text.sse"))
    history = [
        UserMessage("Hi"),
        AssistantMessage(text="Hello", reasoning="no signature"),
        UserMessage("Again"),
    ]
    await collect(model(server).stream(ModelRequest(system="", messages=history)))
    body = server.received[0].json()
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello"}],
    }
    assert "system" not in body


async def test_rate_limit_then_overload_are_retried_with_growing_backoff(server, sleeps):
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.queue(
        json_reply(429, limited), json_reply(529, overloaded), sse("anthropic_thinking_text.sse")
    )
    chunks = await collect(model(server, sleeps).stream(ask()))
    assert isinstance(chunks[-1], Finish)
    assert len(server.received) == 3
    assert len(sleeps.delays) == 2
    assert 0.25 <= sleeps.delays[0] <= 0.5 and 0.5 <= sleeps.delays[1] <= 1.0


async def test_throttling_that_never_ends_gives_up_with_a_retryable_error(server, sleeps):
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    server.queue(*[json_reply(429, limited)] * 4)
    with pytest.raises(ModelError, match=r"rate limiting.*Gave up after 4 attempts") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert caught.value.retryable and caught.value.status == 429
    assert len(server.received) == 4 and len(sleeps.delays) == 3


async def test_context_overflow_says_the_conversation_is_too_long(server, sleeps):
    too_long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 212345 tokens > 200000 maximum",
        },
    }
    server.queue(json_reply(400, too_long))
    with pytest.raises(ModelError, match="conversation is too long") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert not caught.value.retryable and caught.value.status == 400
    assert len(server.received) == 1 and sleeps.delays == []


async def test_bad_key_names_the_variable_to_set(server, sleeps):
    denied = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    server.queue(json_reply(401, denied))
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert caught.value.status == 401 and not caught.value.retryable


async def test_an_error_event_after_text_is_raised_not_replayed(server, sleeps):
    server.queue(sse("anthropic_overloaded_midstream.sse"), sse("anthropic_thinking_text.sse"))
    seen = []
    with pytest.raises(ModelError, match="overloaded") as caught:
        async for chunk in model(server, sleeps).stream(ask()):
            seen.append(chunk)
    assert seen == [TextDelta("Partial")]
    assert caught.value.retryable and caught.value.status == 529
    assert len(server.received) == 1


async def test_missing_credentials_say_which_variable_to_set(monkeypatch, tmp_path):
    for var in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile files to discover
    with pytest.raises(ModelError, match="set ANTHROPIC_API_KEY"):
        await collect(resolve_model("anthropic:claude-sonnet-4-5").stream(ask()))


async def test_resolved_model_uses_the_sdk_environment(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.queue(sse("anthropic_thinking_text.sse"))
    resolved = resolve_model("anthropic:claude-haiku-4-5")
    chunks = await collect(resolved.stream(ask()))
    assert resolved.id == "anthropic:claude-haiku-4-5"
    assert (
        "".join(c.text for c in chunks if isinstance(c, TextDelta))
        == "Hello! How can I help today?"
    )
    assert "sk-ant-env" in key_sent(server.received[0].headers)


async def test_unreachable_server_is_a_retryable_connection_error(sleeps):
    client = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=0)
    subject = AnthropicModel("m", client=client, retry=RetryPolicy(max_attempts=2, sleep=sleeps))
    with pytest.raises(ModelError, match="Could not reach Anthropic") as caught:
        await collect(subject.stream(ask()))
    assert caught.value.retryable and len(sleeps.delays) == 1
