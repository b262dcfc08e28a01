"""The `chat {model}` span of each model call, and the GenAI client metrics of it
(`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`), which record once a
host installs a meter provider. The rest of the engine's instrumentation, and what it
costs when off, is in `engine.telemetry`."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import metrics
from opentelemetry.trace import Span, SpanKind

from agentkit.engine.telemetry import (
    SpanHandle,
    active_span,
    capture_content,
    content_json,
    enabled,
    metrics_enabled,
    set_provider,
    set_usage,
    split_model,
)
from agentkit.errors import TurnInterrupted
from agentkit.events import Usage
from agentkit.models.base import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentkit.version import __version__

# The conventions' finish reasons, from the `Finish` stop reasons of `models.base`.
_FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_call", "max_tokens": "length"}

# The GenAI client metrics, with the conventions' advised buckets. Instruments made on the
# API's proxy meter start recording once a host installs a meter provider.
_meter = metrics.get_meter("agentkit", __version__)
_token_usage = _meter.create_histogram(
    "gen_ai.client.token.usage",
    unit="{token}",
    description="Number of input and output tokens used.",
    explicit_bucket_boundaries_advisory=[4.0**n for n in range(14)],
)
_duration = _meter.create_histogram(
    "gen_ai.client.operation.duration",
    unit="s",
    description="GenAI operation duration.",
    explicit_bucket_boundaries_advisory=[0.01 * 2**n for n in range(14)],
)


class ChatSpan(SpanHandle):
    """The `chat` span of one model call; `chunk()` marks the time to the first chunk."""

    __slots__ = ("_started", "first", "span", "usage")

    def __init__(self, span: Span | None) -> None:
        self.span = span if span is not None and span.is_recording() else None
        self._started = time.perf_counter()
        self.first = self.span is None  # nothing to mark on the no-op handle
        self.usage: Usage | None = None  # the call's usage, once finished (for the metrics)

    def chunk(self) -> None:
        if self.first or self.span is None:
            return
        self.first = True
        seconds = time.perf_counter() - self._started
        self.span.set_attribute("agentkit.time_to_first_chunk_s", seconds)
        self.span.add_event("gen_ai.first_chunk")

    def finish(self, usage: Usage, stop_reason: str, text: str, calls: Sequence[ToolCall]) -> None:
        span = self.span
        if span is None:
            if self is not NO_CHAT:
                self.usage = usage
            return
        self.usage = usage
        reason = _FINISH_REASONS.get(stop_reason, stop_reason)
        span.set_attribute("gen_ai.response.finish_reasons", [reason])
        set_usage(span, usage)
        if capture_content():
            output = _message(AssistantMessage(text, tool_calls=tuple(calls)))
            output["finish_reason"] = reason
            span.set_attribute("gen_ai.output.messages", content_json([output]))


NO_CHAT = ChatSpan(None)


def chat_span(model_id: str, request: ModelRequest) -> AbstractContextManager[ChatSpan]:
    """`chat {model}` around one streamed model call."""
    tracing = enabled()
    if not tracing and not metrics_enabled():
        return NO_CHAT
    return _chat_call(model_id, request, tracing)


@contextmanager
def _chat_call(model_id: str, request: ModelRequest, tracing: bool) -> Iterator[ChatSpan]:
    """The call's span (when tracing) and its GenAI client metrics (when metering)."""
    started = time.perf_counter()
    chat = ChatSpan(None)
    error: str | None = None
    try:
        if tracing:
            with _chat_span(model_id, request) as chat:
                yield chat
        else:
            yield chat
    except TurnInterrupted:
        raise
    except BaseException as exc:
        error = type(exc).__qualname__
        raise
    finally:
        if metrics_enabled():
            _record_call(model_id, chat.usage, time.perf_counter() - started, error)


def _record_call(model_id: str, usage: Usage | None, seconds: float, error: str | None) -> None:
    provider, name = split_model(model_id)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": name,
    }
    if error is not None:
        attributes["error.type"] = error
    _duration.record(seconds, attributes)
    if usage is not None:
        _token_usage.record(usage.input_tokens, {**attributes, "gen_ai.token.type": "input"})
        _token_usage.record(usage.output_tokens, {**attributes, "gen_ai.token.type": "output"})


@contextmanager
def _chat_span(model_id: str, request: ModelRequest) -> Iterator[ChatSpan]:
    provider, name = split_model(model_id)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": name,
        "gen_ai.request.max_tokens": request.max_tokens,
    }
    set_provider(attributes, provider)
    if capture_content():
        attributes["gen_ai.system_instructions"] = content_json(
            [{"type": "text", "content": request.system}]
        )
        attributes["gen_ai.input.messages"] = content_json([_message(m) for m in request.messages])
        attributes["gen_ai.tool.definitions"] = content_json(
            [
                {"type": "function", "name": t.name, "description": t.description}
                for t in request.tools
            ]
        )
    with active_span(f"chat {name}", SpanKind.CLIENT, attributes) as span:
        yield ChatSpan(span)


def _message(message: Message) -> dict[str, Any]:
    """One message in the conventions' shape: a role and its parts."""
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": [{"type": "text", "content": message.text}]}
    if isinstance(message, ToolResultMessage):
        part = {"type": "tool_call_response", "id": message.call_id, "response": message.content}
        return {"role": "tool", "parts": [part]}
    assert isinstance(message, AssistantMessage)
    parts: list[dict[str, Any]] = []
    if message.reasoning:
        parts.append({"type": "reasoning", "content": message.reasoning})
    if message.text:
        parts.append({"type": "text", "content": message.text})
    parts.extend(
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.tool_calls
    )
    return {"role": "assistant", "parts": parts}


__all__ = ["NO_CHAT", "ChatSpan", "chat_span"]
