"""`server.otel`: which variables turn export on, and the server spans of a FastAPI without
native telemetry (the contrib instrumentation), on a provider of the test's own so nothing
global changes in this process."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, get_current_span

from agentkit.server import otel


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, False),
    ],
)
def test_only_an_otlp_traces_endpoint_turns_export_on(env: dict[str, str], on: bool) -> None:
    assert otel.requested(env) is on


def test_nothing_is_installed_when_not_requested(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in otel.ENDPOINTS:
        monkeypatch.delenv(name, raising=False)
    hooks: list[object] = []
    assert otel.install(FastAPI(), hooks) is False
    assert hooks == []


def test_the_contrib_instrumentation_makes_server_spans_under_an_inbound_traceparent() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = FastAPI()
    seen: list[str] = []

    @app.get("/v1/ping")
    async def ping(request: Request) -> dict[str, str]:
        seen.append(format(get_current_span().get_span_context().trace_id, "032x"))
        return {"ok": "yes"}

    otel._instrument_contrib(app, provider)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with TestClient(app) as client:
        r = client.get("/v1/ping", headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"})
    assert r.status_code == 200
    [server] = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert format(server.context.trace_id, "032x") == trace_id
    assert server.parent is not None and format(server.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert seen == [trace_id]  # the handler (where a turn is dispatched) runs inside it
    provider.shutdown()
