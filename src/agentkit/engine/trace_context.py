"""The trace context across a process hop: a turn handed to another process (the Lambda
dispatch payload) carries its W3C headers, and the process that runs it continues the same
trace (docs/observability.md). Free when tracing is off, like `engine.telemetry`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from agentkit.engine.telemetry import enabled

TRACE_CONTEXT = "traceContext"  # the key of the carrier in a dispatch payload


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (`traceparent`, `tracestate`), for a turn
    handed to another process (the Lambda dispatch payload); empty when tracing is off."""
    if not enabled():
        return {}
    from opentelemetry import propagate

    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers


def outgoing(headers: Mapping[str, str] | None = None) -> dict[str, str]:
    """`headers` plus the current trace context's (`carrier()`), for an outgoing HTTP call
    (the Slack and GitHub API, an MCP server): the same headers when tracing is off."""
    return {**(headers or {}), **carrier()}


@contextmanager
def continued_from(headers: object) -> Iterator[None]:
    """Run the block in the trace `headers` (a `carrier()`) came from, when there is one."""
    if not isinstance(headers, dict) or not headers or not enabled():
        yield
        return
    from opentelemetry import context, propagate

    parent = propagate.extract({str(k): str(v) for k, v in headers.items()})
    token = context.attach(parent)
    try:
        yield
    finally:
        context.detach(token)
