"""OpenTelemetry spans of turns, model calls and tool calls (the GenAI conventions).

The one home of the engine's instrumentation. It speaks the OpenTelemetry *API* only: until
a host installs an SDK tracer provider (`server.otel`, when the standard `OTEL_EXPORTER_OTLP_*`
variables ask for one) every function here returns the shared no-op handle at once, without
starting a span, building an attribute or touching the context. What is emitted, and the
variables, are in docs/observability.md:

- `invoke_agent {agent}` per turn invocation (and per subagent run, under its `task` call):
  the session id as `gen_ai.conversation.id`, the turn id, the principal, the outcome; an
  approval the turn parks on is a span event, an interrupt ends it with its reason.
- `chat {model}` per model call: model, token usage, finish reasons, time to first chunk
  (`engine.chat_telemetry`, with the GenAI client metrics of each call).
- `execute_tool {tool}` per tool call: tool name, call id, error status.
- `deliver_hooks` per turn's events handed to the hooks by HooksFunction, in the trace that
  recorded them (their items carry its context across the DynamoDB Streams hop).

The trace context across a process hop (the Lambda dispatch payload) is carried by
`engine.trace_context`.

Message and tool content is recorded only with
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Attribute names follow the
conventions' current draft; the deprecated `gen_ai.system` is added beside
`gen_ai.provider.name` unless `OTEL_SEMCONV_STABILITY_OPT_IN` names `gen_ai_latest_experimental`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agentkit.errors import TurnInterrupted
from agentkit.events import (
    ActionApprovalRequested,
    Payload,
    TurnCompleted,
    TurnFailed,
    Usage,
)
from agentkit.version import __version__

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
STABILITY_OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
_tracer = trace.get_tracer("agentkit", __version__)

# A provider named by the API's own variable is loaded on the first `get_tracer_provider()`.
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def enabled() -> bool:
    """Whether a tracer provider is installed (else every span here is skipped).

    Read from the API's global, which `trace.set_tracer_provider` sets once: the public
    `get_tracer_provider()` looks the environment up on every call, several times the cost
    of this check, which runs at each model and tool call."""
    if _PROVIDER_FROM_ENV:
        return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return trace._TRACER_PROVIDER is not None


def metrics_enabled() -> bool:
    """Whether a meter provider is installed (read as `enabled` reads the tracer's)."""
    if _METER_FROM_ENV:
        return not isinstance(metrics.get_meter_provider(), metrics._internal._ProxyMeterProvider)
    return metrics._internal._METER_PROVIDER is not None


_METER_FROM_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ


def capture_content() -> bool:
    return os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"


def _latest_only() -> bool:
    opted = os.environ.get(STABILITY_OPT_IN, "")
    return "gen_ai_latest_experimental" in (part.strip() for part in opted.split(","))


def split_model(model_id: str) -> tuple[str, str]:
    """(provider, model) of a `provider:model` id; an id with no colon names both."""
    provider, sep, name = model_id.partition(":")
    return (provider, name) if sep else (model_id, model_id)


def set_provider(attributes: dict[str, Any], provider: str) -> None:
    attributes["gen_ai.provider.name"] = provider
    if not _latest_only():
        attributes["gen_ai.system"] = provider


def set_usage(span: Span, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cache_read_tokens:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    if usage.cache_write_tokens:
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)


def _fail(span: Span, exc: BaseException) -> None:
    span.set_status(Status(StatusCode.ERROR, str(exc) or type(exc).__name__))
    span.set_attribute("error.type", type(exc).__qualname__)


@contextmanager
def active_span(name: str, kind: SpanKind, attributes: dict[str, Any]) -> Iterator[Span]:
    """Start `name` as the current span; an interrupt is no error, anything else is."""
    span = _tracer.start_span(name, kind=kind, attributes=attributes)
    try:
        with trace.use_span(span, record_exception=False, set_status_on_exception=False):
            yield span
    except TurnInterrupted:
        span.set_attribute("agentkit.interrupted", True)
        raise
    except BaseException as exc:
        _fail(span, exc)
        if isinstance(exc, Exception):
            span.record_exception(exc)
        raise
    finally:
        span.end()


class SpanHandle:
    """A span handle is its own context manager when it is the no-op one: the sites below
    return it as it is when tracing is off, with no generator, span or context change."""

    __slots__ = ()

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


# ---- turns and subagent runs --------------------------------------------------------


class AgentSpan(SpanHandle):
    """The `invoke_agent` span of one turn invocation. `recording` is False on the no-op
    handle, which the turn loop checks before handing it each payload."""

    __slots__ = ("error", "outcome", "recording", "span")

    def __init__(self, span: Span | None) -> None:
        self.span = span
        self.recording = span is not None and span.is_recording()
        self.outcome: str | None = None
        self.error: str | None = None

    def observe(self, payload: Payload) -> None:
        """Read one recorded payload: the turn's end, or an approval it waits on."""
        if not self.recording:
            return
        if isinstance(payload, TurnCompleted):
            self.outcome = self.outcome or "completed"
        elif isinstance(payload, TurnFailed):
            self.outcome = self.outcome or "failed"
            self.error = self.error or payload.error
        elif isinstance(payload, ActionApprovalRequested):
            self.outcome = "awaiting_approval"
            assert self.span is not None
            self.span.add_event(
                "agentkit.approval.requested",
                {"gen_ai.tool.name": payload.tool_name, "gen_ai.tool.call.id": payload.call_id},
            )

    def interrupted(self, reason: str) -> None:
        """The turn was stopped (a stop request, a pause, a kill): ended with `reason`."""
        if self.recording:
            self.outcome = "interrupted"
            self.error = reason

    def ended(self, error: str | None, usage: Usage) -> None:
        """A subagent run's end: its answer, or the error it came back with."""
        if self.recording:
            self.outcome = "failed" if error is not None else "completed"
            self.error = error
            self.finish(usage, None)

    def finish(self, usage: Usage, cost_usd: float | None, *, continued: bool = False) -> None:
        """Record the turn's outcome and its usage so far (all invocations of the turn)."""
        span = self.span
        if not self.recording or span is None:
            return
        outcome = "continued" if continued else (self.outcome or "stopped")
        span.set_attribute("agentkit.turn.outcome", outcome)
        set_usage(span, usage)
        if cost_usd is not None:
            span.set_attribute("agentkit.cost_usd", cost_usd)
        if self.error is not None:
            span.set_attribute("agentkit.turn.error", self.error)
            if outcome == "failed":
                span.set_status(Status(StatusCode.ERROR, self.error))
                span.set_attribute("error.type", "turn_failed")


NO_SPAN = AgentSpan(None)


def agent_span(
    agent: str | None,
    *,
    conversation_id: str,
    turn_id: str | None = None,
    principal: str | None = None,
    model_id: str | None = None,
) -> AbstractContextManager[AgentSpan]:
    """`invoke_agent {agent}` around one turn invocation (or one subagent run); plain
    `invoke_agent` when the agent's name is not known, as the conventions say."""
    if not enabled():
        return NO_SPAN
    return _agent_span(agent, conversation_id, turn_id, principal, model_id)


@contextmanager
def _agent_span(
    agent: str | None,
    conversation_id: str,
    turn_id: str | None,
    principal: str | None,
    model_id: str | None,
) -> Iterator[AgentSpan]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": conversation_id,
    }
    if agent is not None:
        attributes["gen_ai.agent.name"] = agent
    if turn_id is not None:
        attributes["agentkit.turn.id"] = turn_id
    if principal is not None:
        attributes["agentkit.principal"] = principal
    if model_id is not None:
        provider, name = split_model(model_id)
        set_provider(attributes, provider)
        attributes["gen_ai.request.model"] = name
    name = "invoke_agent" if agent is None else f"invoke_agent {agent}"
    with active_span(name, SpanKind.INTERNAL, attributes) as span:
        yield AgentSpan(span)


def content_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# ---- tool calls ---------------------------------------------------------------------


class ToolSpan(SpanHandle):
    """The `execute_tool` span of one call; `result()` records how it ended."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span if span is not None and span.is_recording() else None

    def result(self, is_error: bool, result: Any = None, error: str | None = None) -> None:
        span = self.span
        if span is None:
            return
        if is_error:
            span.set_status(Status(StatusCode.ERROR, error or "tool failed"))
            span.set_attribute("error.type", "tool_error")
        if capture_content():
            span.set_attribute(
                "gen_ai.tool.call.result", content_json(error if is_error else result)
            )


NO_TOOL = ToolSpan(None)


def tool_span(
    name: str, call_id: str, arguments: dict[str, Any]
) -> AbstractContextManager[ToolSpan]:
    """`execute_tool {name}` around one tool call (a `task` call holds its subagent)."""
    if not enabled():
        return NO_TOOL
    return _tool_span(name, call_id, arguments)


@contextmanager
def _tool_span(name: str, call_id: str, arguments: dict[str, Any]) -> Iterator[ToolSpan]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if capture_content():
        attributes["gen_ai.tool.call.arguments"] = content_json(arguments)
    with active_span(f"execute_tool {name}", SpanKind.INTERNAL, attributes) as span:
        yield ToolSpan(span)


# ---- hook deliveries ----------------------------------------------------------------


class HookSpan(SpanHandle):
    """The `deliver_hooks` span of one turn's events in a hook batch."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span if span is not None and span.is_recording() else None

    def failed(self, count: int) -> None:
        """`count` hook calls raised: recorded, never raised (hooks only observe)."""
        if self.span is not None and count:
            self.span.set_attribute("agentkit.hooks.failures", count)
            self.span.set_status(Status(StatusCode.ERROR, f"{count} hook call(s) failed"))
            self.span.set_attribute("error.type", "hook_error")


NO_HOOKS = HookSpan(None)


def hook_span(
    conversation_id: str, turn_id: str | None, events: int
) -> AbstractContextManager[HookSpan]:
    """`deliver_hooks` around handing `events` events of one turn to the hooks."""
    if not enabled():
        return NO_HOOKS
    return _hook_span(conversation_id, turn_id, events)


@contextmanager
def _hook_span(conversation_id: str, turn_id: str | None, events: int) -> Iterator[HookSpan]:
    attributes: dict[str, Any] = {
        "gen_ai.conversation.id": conversation_id,
        "agentkit.hooks.events": events,
    }
    if turn_id is not None:
        attributes["agentkit.turn.id"] = turn_id
    with active_span("deliver_hooks", SpanKind.CONSUMER, attributes) as span:
        yield HookSpan(span)


__all__ = [
    "NO_SPAN",
    "AgentSpan",
    "HookSpan",
    "SpanHandle",
    "ToolSpan",
    "active_span",
    "agent_span",
    "capture_content",
    "content_json",
    "enabled",
    "hook_span",
    "metrics_enabled",
    "set_provider",
    "set_usage",
    "split_model",
    "tool_span",
]
