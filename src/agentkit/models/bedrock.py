"""The `bedrock:<model-id>` provider: boto3 `bedrock-runtime` ConverseStream.

Supports tool use (streamed `toolUse.input` fragments are assembled into one call),
reasoning content (text and signature, passed back in follow-up requests; set
`AGENTKIT_THINKING_BUDGET` to ask Claude models on Bedrock to think) and usage with cache
read and write tokens. Region and credentials come from the usual AWS sources
(`AWS_REGION`, `AWS_PROFILE`, keys, a role). botocore's own retries are turned off: ours
apply, with backoff and jitter.

boto3 is synchronous, so calls and stream reads run in worker threads, one event at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import boto3
import botocore.exceptions
from botocore.config import Config

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models._env import thinking_budget_from_env
from agentkit.models._retry import (
    RetryPolicy,
    connection_error,
    http_error,
    other_error,
    retrying,
)
from agentkit.models._wire import add_blocks, tool_arguments
from agentkit.models.base import (
    AssistantMessage,
    Finish,
    Message,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UserMessage,
)
from agentkit.models.windows import window_for

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

PROVIDER = "Bedrock"
# Context windows by model id prefix (see `models.windows`), without the cross-region
# inference profile's prefix (`us.`, `eu.`, `apac.`, `global.`).
CONTEXT_WINDOWS: dict[str, int] = {
    "anthropic.claude": 200_000,
    "amazon.nova-pro": 300_000,
    "amazon.nova-lite": 300_000,
    "amazon.nova-micro": 128_000,
    "amazon.nova-premier": 1_000_000,
    "meta.llama3-1": 128_000,
    "meta.llama3-2": 128_000,
    "meta.llama3-3": 128_000,
    "mistral.mistral-large": 128_000,
    "cohere.command-r": 128_000,
}
_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.")
_CREDENTIALS_HINT = (
    "check the AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
)
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}
# Bedrock error codes (HTTP errors and in-stream exceptions) as the HTTP status they mean.
_CODE_STATUS = {
    "validationexception": 400,
    "unrecognizedclientexception": 401,
    "expiredtokenexception": 401,
    "invalidsignatureexception": 401,
    "accessdeniedexception": 403,
    "resourcenotfoundexception": 404,
    "modeltimeoutexception": 408,
    "throttlingexception": 429,
    "toomanyrequestsexception": 429,
    "internalserverexception": 500,
    "modelstreamerrorexception": 500,
    "modelerrorexception": 500,
    "serviceunavailableexception": 503,
    "modelnotreadyexception": 503,
}


def create(model: str) -> BedrockModel:
    """The model for `bedrock:<model-id>`, configured from the environment."""
    return BedrockModel(model)


class BedrockModel:
    """Streams steps from ConverseStream. Pass `client` to choose endpoint and credentials."""

    def __init__(
        self,
        model: str,
        *,
        client: BedrockRuntimeClient | None = None,
        retry: RetryPolicy | None = None,
        thinking_budget: int | None = None,
    ) -> None:
        self.model = model
        self._client = client
        self._retry = retry or RetryPolicy()
        self._thinking = (
            thinking_budget if thinking_budget is not None else thinking_budget_from_env()
        )

    @property
    def id(self) -> str:
        return f"bedrock:{self.model}"

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (from `CONTEXT_WINDOWS`)."""
        name = self.model
        for prefix in _PROFILE_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        return window_for(CONTEXT_WINDOWS, name)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one step; retryable failures before the first chunk are retried."""
        return retrying(lambda: self._once(request), self._retry, self._translate)

    def client(self) -> BedrockRuntimeClient:
        """The boto3 client (built on first use, with botocore's retries off)."""
        if self._client is None:
            config = Config(retries={"total_max_attempts": 1, "mode": "standard"})
            # A session of its own: the default session caches credentials it resolved once.
            self._client = boto3.session.Session().client("bedrock-runtime", config=config)
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The ConverseStream request for one step."""
        max_tokens = request.max_tokens + (self._thinking or 0)
        params: dict[str, Any] = {
            "modelId": self.model,
            "messages": to_wire_messages(request.messages),
            "inferenceConfig": {"maxTokens": max_tokens},
        }
        if request.system:
            params["system"] = [{"text": request.system}]
        if request.tools:
            params["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description,
                            "inputSchema": {"json": t.input_schema},
                        }
                    }
                    for t in request.tools
                ]
            }
        if self._thinking:
            params["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": self._thinking}
            }
        return params

    async def _once(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        client = self._client if self._client is not None else await asyncio.to_thread(self.client)
        params = self.params(request)
        response = await asyncio.to_thread(lambda: client.converse_stream(**params))
        stream = response["stream"]
        events: Iterator[Any] = iter(stream)
        state = _StreamState()
        try:
            while True:
                event = await asyncio.to_thread(next, events, None)
                if event is None:
                    break
                for chunk in state.feed(event):
                    yield chunk
        finally:
            stream.close()
        yield state.finish()

    def _translate(self, exc: Exception) -> ModelError:
        if isinstance(exc, botocore.exceptions.NoCredentialsError):
            return ModelError(
                "No AWS credentials found for Bedrock: set AWS_PROFILE, or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an IAM role."
            )
        if isinstance(exc, botocore.exceptions.NoRegionError):
            return ModelError("No AWS region set for Bedrock: set AWS_REGION (e.g. us-east-1).")
        if isinstance(exc, botocore.exceptions.ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            detail = str(error.get("Message", "")) or code
            status = _CODE_STATUS.get(code.lower())
            if status is None:
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return http_error(
                PROVIDER, status, detail, model=self.model, credentials_hint=_CREDENTIALS_HINT
            )
        if isinstance(
            exc,
            botocore.exceptions.EndpointConnectionError
            | botocore.exceptions.ConnectionClosedError
            | botocore.exceptions.ReadTimeoutError
            | botocore.exceptions.ConnectTimeoutError,
        ):
            return connection_error(PROVIDER, self.client().meta.endpoint_url, str(exc))
        return other_error(
            PROVIDER, exc, from_sdk=isinstance(exc, botocore.exceptions.BotoCoreError)
        )


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Converse messages; consecutive same-role blocks are merged."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            add_blocks(out, "user", [{"text": message.text}])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if message.reasoning and message.reasoning_signature:
                blocks.append(
                    {
                        "reasoningContent": {
                            "reasoningText": {
                                "text": message.reasoning,
                                "signature": message.reasoning_signature,
                            }
                        }
                    }
                )
            if message.text:
                blocks.append({"text": message.text})
            blocks += [
                {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}}
                for c in message.tool_calls
            ]
            if blocks:
                add_blocks(out, "assistant", blocks)
        else:
            result = {
                "toolUseId": message.call_id,
                "content": [{"text": message.content}],
                "status": "error" if message.is_error else "success",
            }
            add_blocks(out, "user", [{"toolResult": result}])
    return out


class _StreamState:
    """Folds ConverseStream events into our chunks, block by block."""

    def __init__(self) -> None:
        self.tools: dict[int, dict[str, str]] = {}
        self.signatures: dict[int, str] = {}
        self.stop_reason: StopReason = "other"
        self.usage = Usage()

    def feed(self, event: dict[str, Any]) -> list[ModelChunk]:
        if "contentBlockStart" in event:
            body = event["contentBlockStart"]
            tool = body.get("start", {}).get("toolUse")
            if tool:
                self.tools[body["contentBlockIndex"]] = {
                    "id": tool["toolUseId"],
                    "name": tool["name"],
                    "input": "",
                }
        elif "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            return self._delta(body["contentBlockIndex"], body.get("delta", {}))
        elif "contentBlockStop" in event:
            return self._stop(event["contentBlockStop"]["contentBlockIndex"])
        elif "messageStop" in event:
            reason = event["messageStop"].get("stopReason", "")
            self.stop_reason = _STOP_REASONS.get(reason, "other")
        elif "metadata" in event:
            usage = event["metadata"].get("usage", {})
            self.usage = Usage(
                input_tokens=int(usage.get("inputTokens", 0)),
                output_tokens=int(usage.get("outputTokens", 0)),
                cache_read_tokens=int(usage.get("cacheReadInputTokens", 0)),
                cache_write_tokens=int(usage.get("cacheWriteInputTokens", 0)),
            )
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ModelChunk]:
        if delta.get("text"):
            return [TextDelta(delta["text"])]
        if "toolUse" in delta and index in self.tools:
            self.tools[index]["input"] += delta["toolUse"].get("input", "")
        reasoning = delta.get("reasoningContent")
        if reasoning:
            if reasoning.get("signature"):
                self.signatures[index] = reasoning["signature"]
            if reasoning.get("text"):
                return [ReasoningDelta(reasoning["text"])]
        return []

    def _stop(self, index: int) -> list[ModelChunk]:
        signature = self.signatures.pop(index, None)
        if signature:
            return [ReasoningDelta("", signature=signature)]
        tool = self.tools.pop(index, None)
        if tool is None:
            return []
        arguments = tool_arguments(PROVIDER, tool["name"], tool["input"])
        return [ToolCallChunk(ToolCall(tool["id"], tool["name"], arguments))]

    def finish(self) -> Finish:
        return Finish(stop_reason=self.stop_reason, usage=self.usage)
