"""The `openai:<model>` provider: the official SDK's streaming chat completions.

Works with OpenAI and any OpenAI-compatible server: the SDK reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY`. When a base URL is set and no key, a placeholder key is sent, since
local servers usually ignore it. Tool-call argument fragments are assembled by index;
usage comes from the final chunk (`stream_options.include_usage`), with cached prompt
tokens from `prompt_tokens_details`. Servers that stream reasoning as `reasoning_content`
(or `reasoning`) on the delta surface it as reasoning.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models._retry import (
    RetryPolicy,
    connection_error,
    http_error,
    other_error,
    retrying,
)
from agentkit.models._wire import tool_arguments
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

PROVIDER = "OpenAI"
# Context windows by model id prefix (see `models.windows`).
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
}
_CREDENTIALS_HINT = "set OPENAI_API_KEY to a valid key"
_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def create(model: str) -> OpenAIModel:
    """The model for `openai:<model>`, configured from the environment."""
    return OpenAIModel(model)


class OpenAIModel:
    """Streams steps from chat completions. Pass `client` to choose endpoint and key."""

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self._client = client
        self._retry = retry or RetryPolicy()

    @property
    def id(self) -> str:
        return f"openai:{self.model}"

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (from `CONTEXT_WINDOWS`)."""
        return window_for(CONTEXT_WINDOWS, self.model)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one step; retryable failures before the first chunk are retried."""
        return retrying(lambda: self._once(request), self._retry, self._translate)

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client (built on first use; our retry policy replaces the SDK's)."""
        if self._client is None:
            key = os.environ.get("OPENAI_API_KEY") or None
            if key is None and not os.environ.get("OPENAI_BASE_URL"):
                raise ModelError(
                    "No OpenAI credentials found: set OPENAI_API_KEY, or set "
                    "OPENAI_BASE_URL to an OpenAI-compatible server."
                )
            try:
                self._client = openai.AsyncOpenAI(api_key=key or "unused", max_retries=0)
            except openai.OpenAIError as exc:
                raise ModelError(f"Could not set up the OpenAI client: {exc}") from exc
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The chat completions request body for one step."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += to_wire_messages(request.messages)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_completion_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in request.tools
            ]
        return params

    async def _once(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        client = self.client()
        chunks = await client.chat.completions.create(**self.params(request))
        state = _StreamState()
        async with chunks:
            async for chunk in chunks:
                for out in state.feed(chunk):
                    yield out
        for out in state.finish():
            yield out

    def _translate(self, exc: Exception) -> ModelError:
        if isinstance(exc, openai.APIConnectionError):
            return connection_error(PROVIDER, str(self.client().base_url), str(exc))
        if isinstance(exc, openai.APIStatusError):
            status, detail = _status_and_detail(exc)
            return http_error(
                PROVIDER, status, detail, model=self.model, credentials_hint=_CREDENTIALS_HINT
            )
        return other_error(PROVIDER, exc, from_sdk=isinstance(exc, openai.OpenAIError))


def _status_and_detail(exc: openai.APIStatusError) -> tuple[int, str]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict):
        message = str(body.get("message") or exc.message)
        code = body.get("code") or body.get("type")
        detail = f"{message} ({code})" if code and str(code) not in message else message
    else:
        detail = str(exc.message)
    status = exc.status_code
    if status < 400:  # an error inside a 200 stream
        status = 429 if "rate" in detail.lower() else 500
        if "context" in detail.lower():
            status = 400
    return status, detail


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as chat completion messages (system prompt excluded)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                wire["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in message.tool_calls
                ]
            out.append(wire)
        else:
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
    return out


class _StreamState:
    """Folds completion chunks into our chunks; tool calls are emitted when complete."""

    def __init__(self) -> None:
        self.calls: dict[int, dict[str, str]] = {}
        self.stop_reason: StopReason = "other"
        self.usage = Usage()
        self.message_id: str | None = None

    def feed(self, chunk: Any) -> list[ModelChunk]:
        out: list[ModelChunk] = []
        self.message_id = getattr(chunk, "id", None) or self.message_id
        if chunk.usage is not None:
            self._take_usage(chunk.usage)
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                thought = getattr(delta, "reasoning_content", None) or getattr(
                    delta, "reasoning", None
                )
                if isinstance(thought, str) and thought:
                    out.append(ReasoningDelta(thought))
                if delta.content:
                    out.append(TextDelta(delta.content))
                for fragment in delta.tool_calls or []:
                    self._take_fragment(fragment)
            if choice.finish_reason:
                self.stop_reason = _STOP_REASONS.get(choice.finish_reason, "other")
        return out

    def _take_fragment(self, fragment: Any) -> None:
        call = self.calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
        if fragment.id:
            call["id"] = fragment.id
        function = fragment.function
        if function is not None:
            if function.name:
                call["name"] += function.name
            if function.arguments:
                call["arguments"] += function.arguments

    def _take_usage(self, usage: Any) -> None:
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        # Our input_tokens counts input not read from cache, as the other providers do.
        self.usage = Usage(
            input_tokens=max(0, int(usage.prompt_tokens or 0) - cached),
            output_tokens=int(usage.completion_tokens or 0),
            cache_read_tokens=cached,
        )

    def finish(self) -> list[ModelChunk]:
        out: list[ModelChunk] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            arguments = tool_arguments(PROVIDER, call["name"], call["arguments"])
            out.append(
                ToolCallChunk(ToolCall(call["id"] or f"call_{index}", call["name"], arguments))
            )
        out.append(
            Finish(stop_reason=self.stop_reason, usage=self.usage, message_id=self.message_id)
        )
        return out
