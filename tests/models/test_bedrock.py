"""The Bedrock adapter through botocore, against recorded ConverseStream event streams.

The loopback server speaks the real HTTP protocol and the binary
`application/vnd.amazon.eventstream` framing (with CRCs), so botocore signs, sends, parses
and raises exactly as it would against AWS.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config

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
from agentkit.models.bedrock import BedrockModel
from tests.models.common import WEATHER, SleepRecorder, ask, retry_policy
from tests.models.replay import (
    ReplayServer,
    Reply,
    collect,
    event_frame,
    eventstream,
    exception_frame,
    json_reply,
)

MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def model(
    server: ReplayServer, sleeps: SleepRecorder | None = None, **kwargs: object
) -> BedrockModel:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )
    retry = retry_policy(sleeps)
    return BedrockModel(MODEL_ID, client=client, retry=retry, **kwargs)  # type: ignore[arg-type]


def aws_error(status: int, code: str, message: str):
    return json_reply(
        status, {"message": message}, **{"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/"}
    )


async def test_reasoning_text_and_assembled_tool_input_stream_in_order(server):
    server.queue(eventstream("bedrock_tool_use.jsonl"))
    chunks = await collect(model(server).stream(ask("Weather in Lima?", tools=[WEATHER])))
    assert chunks == [
        ReasoningDelta("The user wants the weather. "),
        ReasoningDelta("I should call the tool."),
        ReasoningDelta("", signature="ErcBCkgIAxABGAIiQMuZ9Bj3ip"),
        TextDelta("Checking "),
        TextDelta("now."),
        ToolCallChunk(
            ToolCall("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather", {"city": "Lima", "days": 2})
        ),
        Finish("tool_use", Usage(input_tokens=380, output_tokens=64, cache_read_tokens=1024)),
    ]


async def test_request_is_a_converse_stream_call_in_wire_shape(server):
    server.queue(eventstream("bedrock_text.jsonl"))
    history = [
        UserMessage("Weather in Lima?"),
        AssistantMessage(
            text="Checking.",
            reasoning="Need the tool.",
            reasoning_signature="sig-1",
            tool_calls=(ToolCall("tu_1", "get_weather", {"city": "Lima"}),),
        ),
        ToolResultMessage("tu_1", "get_weather", '{"temp": 18}'),
        ToolResultMessage("tu_2", "get_weather", "boom", is_error=True),
    ]
    request = ModelRequest(system="Be brief.", messages=history, tools=[WEATHER], max_tokens=300)
    await collect(model(server, thinking_budget=1024).stream(request))
    sent = server.received[0]
    assert sent.path.endswith("/converse-stream")
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    body = sent.json()
    assert body["system"] == [{"text": "Be brief."}]
    assert body["inferenceConfig"] == {"maxTokens": 1324}
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }
    assert body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] == {
        "json": WEATHER.input_schema
    }
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Lima?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Need the tool.", "signature": "sig-1"}
                    }
                },
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "tu_1",
                        "name": "get_weather",
                        "input": {"city": "Lima"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tu_1",
                        "content": [{"text": '{"temp": 18}'}],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "tu_2",
                        "content": [{"text": "boom"}],
                        "status": "error",
                    }
                },
            ],
        },
    ]


async def test_throttling_is_retried_then_succeeds(server, sleeps):
    server.queue(
        aws_error(
            429, "ThrottlingException", "Too many requests, please wait before trying again."
        ),
        eventstream("bedrock_throttled_in_stream.jsonl"),
        eventstream("bedrock_text.jsonl"),
    )
    chunks = await collect(model(server, sleeps).stream(ask()))
    assert chunks[-1] == Finish("end_turn", Usage(input_tokens=12, output_tokens=4))
    assert len(server.received) == 3 and len(sleeps.delays) == 2


async def test_throttling_that_never_ends_gives_up(server, sleeps):
    server.queue(*[aws_error(429, "ThrottlingException", "Rate exceeded")] * 4)
    with pytest.raises(ModelError, match=r"rate limiting.*Gave up after 4 attempts") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert caught.value.retryable and caught.value.status == 429


async def test_input_too_long_says_the_conversation_is_too_long(server, sleeps):
    server.queue(aws_error(400, "ValidationException", "Input is too long for requested model."))
    with pytest.raises(ModelError, match="conversation is too long") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert caught.value.status == 400 and not caught.value.retryable and sleeps.delays == []


async def test_access_denied_points_at_credentials_and_model_access(server, sleeps):
    server.queue(
        aws_error(
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        )
    )
    with pytest.raises(ModelError, match="denied access") as caught:
        await collect(model(server, sleeps).stream(ask()))
    assert caught.value.status == 403


async def test_missing_credentials_say_what_to_set(server, monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
    with pytest.raises(ModelError, match="No AWS credentials found"):
        await collect(resolve_model(f"bedrock:{MODEL_ID}").stream(ask()))
    assert server.received == []


async def test_resolved_model_honours_the_aws_endpoint_variable(server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
    server.queue(eventstream("bedrock_text.jsonl"))
    resolved = resolve_model(f"bedrock:{MODEL_ID}")
    chunks = await collect(resolved.stream(ask()))
    assert resolved.id == f"bedrock:{MODEL_ID}"
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Hello there."


async def test_a_stream_error_after_text_is_raised_not_replayed(server, sleeps):
    frames = (
        event_frame("messageStart", {"role": "assistant"})
        + event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hal"}})
        + exception_frame("modelStreamErrorException", "The model stream was interrupted.")
    )
    server.queue(Reply(200, frames, {"content-type": "application/vnd.amazon.eventstream"}))
    server.queue(eventstream("bedrock_text.jsonl"))
    seen = []
    with pytest.raises(ModelError, match="unavailable or overloaded") as caught:
        async for chunk in model(server, sleeps).stream(ask()):
            seen.append(chunk)
    assert seen == [TextDelta("Hal")]
    assert caught.value.retryable and len(server.received) == 1


async def test_a_missing_region_says_to_set_aws_region(monkeypatch, tmp_path):
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(ModelError, match="set AWS_REGION"):
        await collect(resolve_model(f"bedrock:{MODEL_ID}").stream(ask()))
