"""The `anthropic:<model>` provider: the official SDK's streaming Messages API.

Supports tool use (streamed `input_json_delta` fragments are assembled into one call),
extended thinking (set `AGENTKIT_THINKING_BUDGET` to a token budget; thinking blocks and
their signatures are passed back in follow-up requests, as the API requires), prompt
caching of the system prompt, and usage with cache read and write tokens. Credentials and
the endpoint come from the SDK's usual sources (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

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

PROVIDER = "Anthropic"
# Context windows by model id prefix (see `models.windows`); 1M-token betas are opt-in.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "claude-2.0": 100_000,
    "claude-instant": 100_000,
}
_CREDENTIALS_HINT = "set ANTHROPIC_API_KEY to a valid key"
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}
# Error types the API sends in an SSE `error` event (the HTTP status is then 200).
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def create(model: str) -> AnthropicModel:
    """The model for `anthropic:<model>`, configured from the environment."""
    return AnthropicModel(model)


class AnthropicModel:
    """Streams steps from the Messages API. Pass `client` to choose endpoint and key."""

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
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
        return f"anthropic:{self.model}"

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (from `CONTEXT_WINDOWS`)."""
        return window_for(CONTEXT_WINDOWS, self.model)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one step; retryable failures before the first chunk are retried."""
        return retrying(lambda: self._once(request), self._retry, self._translate)

    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client (built on first use; our retry policy replaces the SDK's)."""
        if self._client is None:
            try:
                client = anthropic.AsyncAnthropic(max_retries=0)
            except anthropic.AnthropicError as exc:
                raise ModelError(
                    f"Could not set up the Anthropic client ({_CREDENTIALS_HINT}, or fix the "
                    f"credentials profile): {exc}"
                ) from exc
            if not (client.api_key or client.auth_token or client.credentials):
                raise ModelError(
                    "No Anthropic credentials found: set ANTHROPIC_API_KEY (or choose "
                    "another model with AGENTKIT_MODEL)."
                )
            self._client = client
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API request body for one step."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": to_wire_messages(request.messages),
        }
        if request.system:
            # Marked cacheable: the system prompt repeats on every step of every turn.
            params["system"] = [
                {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
            ]
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        if self._thinking:
            params["thinking"] = {"type": "enabled", "budget_tokens": self._thinking}
            # The budget counts against max_tokens, which must stay larger than it.
            params["max_tokens"] = request.max_tokens + self._thinking
        return params

    async def _once(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        client = self.client()
        events = await client.messages.create(**self.params(request), stream=True)
        state = _StreamState()
        async with events:
            async for event in events:
                for chunk in state.feed(event):
                    yield chunk
        yield state.finish()

    def _translate(self, exc: Exception) -> ModelError:
        if isinstance(exc, anthropic.APIConnectionError):
            return connection_error(PROVIDER, str(self.client().base_url), str(exc))
        if isinstance(exc, anthropic.APIStatusError):
            status, detail = _status_and_detail(exc)
            return http_error(
                PROVIDER, status, detail, model=self.model, credentials_hint=_CREDENTIALS_HINT
            )
        if isinstance(exc, TypeError) and "authentication" in str(exc):
            return ModelError(f"No Anthropic credentials found: {_CREDENTIALS_HINT}.")
        return other_error(PROVIDER, exc, from_sdk=isinstance(exc, anthropic.AnthropicError))


def _status_and_detail(exc: anthropic.APIStatusError) -> tuple[int, str]:
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        detail = str(error.get("message") or error.get("type") or "")
        kind = str(error.get("type") or "")
    else:
        detail, kind = str(exc.message), ""
    status = exc.status_code
    if status < 400:  # an error event inside a 200 stream: its type says what happened
        status = _ERROR_STATUS.get(kind, 500)
    return status, detail


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Messages API messages; consecutive same-role blocks are merged."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            add_blocks(out, "user", [{"type": "text", "text": message.text}])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            # Thinking goes back only with its signature: the API rejects unsigned blocks.
            if message.reasoning and message.reasoning_signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": message.reasoning,
                        "signature": message.reasoning_signature,
                    }
                )
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in message.tool_calls
            ]
            if blocks:
                add_blocks(out, "assistant", blocks)
        else:
            add_blocks(
                out,
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.call_id,
                        "content": message.content,
                        "is_error": message.is_error,
                    }
                ],
            )
    return out


class _StreamState:
    """Folds raw stream events into our chunks, block by block."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: StopReason = "other"
        self.message_id: str | None = None

    def feed(self, event: Any) -> list[ModelChunk]:
        kind = event.type
        if kind == "message_start":
            self.message_id = getattr(event.message, "id", None) or None
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = {
                "type": block.type,
                "id": getattr(block, "id", None),
                "name": getattr(block, "name", None),
                "json": "",
                "signature": getattr(block, "signature", None) or None,
            }
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(event.index)
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = _STOP_REASONS.get(event.delta.stop_reason, "other")
            self._take_usage(event.usage)
        return []

    def _delta(self, index: int, delta: Any) -> list[ModelChunk]:
        block = self.blocks.setdefault(index, {"type": "unknown", "json": "", "signature": None})
        if delta.type == "text_delta" and delta.text:
            return [TextDelta(delta.text)]
        if delta.type == "thinking_delta" and delta.thinking:
            return [ReasoningDelta(delta.thinking)]
        if delta.type == "signature_delta":
            block["signature"] = delta.signature
        elif delta.type == "input_json_delta":
            block["json"] += delta.partial_json
        return []

    def _stop(self, index: int) -> list[ModelChunk]:
        block = self.blocks.pop(index, None)
        if block is None:
            return []
        if block["type"] == "thinking" and block["signature"]:
            # The signature closes the block; the engine keeps it with the reasoning.
            return [ReasoningDelta("", signature=block["signature"])]
        if block["type"] == "tool_use":
            arguments = tool_arguments(PROVIDER, block["name"], block["json"])
            return [ToolCallChunk(ToolCall(block["id"], block["name"], arguments))]
        return []

    def _take_usage(self, usage: Any) -> None:
        for ours, theirs in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
        ):
            value = getattr(usage, theirs, None)
            if value is not None:
                self.usage[ours] = int(value)

    def finish(self) -> Finish:
        return Finish(
            stop_reason=self.stop_reason, usage=Usage(**self.usage), message_id=self.message_id
        )
