"""What every handler shares: one event loop and one `AwsHost` per cold start, and the
Powertools wrapping (structured logs with the Lambda context, tracing, metrics flushed at
the end of each invocation)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agentkit.aws.host import AwsHost

T = TypeVar("T")
Handler = Callable[[dict[str, Any], Any], Any]

_loop: asyncio.AbstractEventLoop | None = None
_host: AwsHost | None = None


def loop() -> asyncio.AbstractEventLoop:
    """The process's event loop, kept across invocations (the store and clients live on)."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    asyncio.set_event_loop(_loop)
    return _loop


def run(coro: Coroutine[Any, Any, T]) -> T:
    return loop().run_until_complete(coro)


def host() -> AwsHost:
    """The host of this cold start, built from the environment on first use."""
    global _host
    if _host is None:
        from agentkit.aws.host import MetricsFanout
        from agentkit.aws.observability import record_turn_metrics

        _host = AwsHost.from_env(fanout=MetricsFanout(record_turn_metrics))
    return _host


def current_host() -> AwsHost | None:
    """The host built (or installed) so far, if any; never builds one."""
    return _host


def use_host(new: AwsHost | None) -> None:
    """Install a host built elsewhere (tests, `sam local` tooling); None forgets it."""
    global _host
    _host = new


def tracing_enabled() -> bool:
    """Powertools Tracer (X-Ray subsegments) unless POWERTOOLS_TRACE_DISABLED says no.

    Loading the X-Ray SDK costs a few hundred milliseconds, so a function with tracing
    disabled never imports it; Lambda still records the invocation's own segment."""
    return os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in ("1", "true")


def instrumented(fn: Handler) -> Handler:
    """Wrap a handler with the Powertools Logger context, Tracer and Metrics flush."""

    @functools.wraps(fn)
    def wrapper(event: dict[str, Any], context: Any) -> Any:
        from agentkit.aws import observability
        from agentkit.server import otel

        # OpenTelemetry export when OTEL_EXPORTER_OTLP_* asks for it (docs/observability.md);
        # flushed before the invocation returns, since Lambda may freeze the process after.
        otel.configure()
        log = observability.logger()
        # Responses and errors carry continuation tokens and conversation text: never
        # copied into trace metadata.
        traced = (
            observability.tracer().capture_lambda_handler(
                fn, capture_response=False, capture_error=False
            )
            if tracing_enabled()
            else fn
        )
        logged = log.inject_lambda_context(traced, clear_state=True)
        try:
            return logged(event, context)
        finally:
            metrics = observability.metrics_if_used()
            if metrics is not None and metrics.metric_set:
                metrics.flush_metrics()
            otel.flush()

    return wrapper
