"""OpenTelemetry export, set up only when the standard variables ask for it.

With `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set (and neither
`OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`), `install` builds the SDK tracer
provider with a batching OTLP/HTTP exporter, makes it the global one (so the engine's spans,
`engine.telemetry`, are recorded), and gives the app HTTP server spans that honour an inbound
`traceparent`. Everything else is read by the SDK from the standard `OTEL_*` variables:
headers, timeout, compression, sampler, batch delays, resource attributes.

With none of them set, nothing is imported beyond this module and nothing is exported: no
endpoint is ever contacted by default. The SDK and the exporter are the `otel` extra
(`pip install 'agentkit-serverless[otel]'`). See docs/observability.md.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("agentkit.server.otel")
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
SERVICE_NAME = "agentkit"
INSTALL_HINT = "pip install 'agentkit-serverless[otel]'"

_lock = threading.Lock()
_provider: Any = None  # the SDK providers this process installed, once each
_meter_provider: Any = None


def requested(environ: Mapping[str, str] | None = None, signal: str = "TRACES") -> bool:
    """Whether the environment asks for export of `signal` (TRACES or METRICS), by the
    standard variables only."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower()
    if exporters == "none":
        return False
    names = (f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    return any(env.get(name, "").strip() for name in names)


def configure() -> Any:
    """The process's SDK tracer provider, built on first call; None when not requested
    or when the `otel` extra is not installed (said in the log). The meter provider is
    set up here too, when metrics are requested."""
    global _provider
    if requested(signal="METRICS"):
        _configure_metrics()
    if not requested():
        return None
    with _lock:
        if _provider is not None:
            return _provider
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            log.warning("OTEL_EXPORTER_OTLP_* is set but %s; run: %s", exc, INSTALL_HINT)
            return None
        provider = TracerProvider(resource=_resource())  # the sampler: OTEL_TRACES_SAMPLER
        # Endpoint, headers, timeout and compression: OTEL_EXPORTER_OTLP_(TRACES_)*;
        # delays and batch sizes: OTEL_BSP_*.
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _provider = provider
        return provider


def _resource() -> Any:
    from opentelemetry.sdk.resources import SERVICE_NAME as SERVICE_KEY
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_KEY, "")).startswith("unknown_service"):
        # Neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES named the service.
        resource = resource.merge(Resource({SERVICE_KEY: SERVICE_NAME}))
    return resource


def _configure_metrics() -> None:
    """The SDK meter provider with a periodic OTLP/HTTP metric exporter (the interval:
    OTEL_METRIC_EXPORT_INTERVAL), once per process."""
    global _meter_provider
    with _lock:
        if _meter_provider is not None:
            return
        try:
            from opentelemetry import metrics
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        except ImportError as exc:
            log.warning("OTEL_EXPORTER_OTLP_* is set but %s; run: %s", exc, INSTALL_HINT)
            return
        reader = PeriodicExportingMetricReader(OTLPMetricExporter())
        provider = MeterProvider(metric_readers=[reader], resource=_resource())
        metrics.set_meter_provider(provider)
        _meter_provider = provider


def flush() -> None:
    """Export what the providers still hold (before Lambda freezes the process, or exit)."""
    for provider in (_provider, _meter_provider):
        if provider is not None:
            provider.force_flush()


def install(app: FastAPI, on_shutdown: list[Callable[[], Awaitable[None]]]) -> bool:
    """Export this app's traces when requested: the provider, server spans for `app`, and
    a hook added to `on_shutdown` that flushes the spans still batched. False when off.

    FastAPI versions with native telemetry (`fastapi.telemetry`) trace requests themselves
    once a global provider exists; older ones get the contrib instrumentation."""
    provider = configure()
    if provider is None and _meter_provider is None:
        return False
    if provider is not None:
        try:
            import fastapi.telemetry  # noqa: F401 - present: FastAPI makes the server spans
        except ImportError:
            _instrument_contrib(app, provider)

    async def flush_at_shutdown() -> None:
        flush()

    on_shutdown.append(flush_at_shutdown)
    return True


def _instrument_contrib(app: FastAPI, provider: Any) -> None:
    try:
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
    except ImportError:
        log.warning("no HTTP server spans: %s", INSTALL_HINT)
        return
    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=provider, exclude_spans=["receive", "send"]
    )


__all__ = ["configure", "flush", "install", "requested"]
