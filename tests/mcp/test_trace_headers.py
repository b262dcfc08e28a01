"""An MCP call over streamable HTTP carries the caller's trace context out: made inside a
span, the request reaches the server with a `traceparent` of that span's trace; with tracing
off, none. The provider is the test's own, set only for the test (see
tests/channels/test_trace_headers.py), so this process stays untraced."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from agentkit import define_mcp_connection
from agentkit.mcp.connections import McpConnections
from tests.mcp.servers import HttpUnits

pytestmark = pytest.mark.slow(reason="starts an MCP server in a subprocess")


@pytest.fixture(scope="module")
def http_units() -> Iterator[HttpUnits]:
    server = HttpUnits({}).start()
    yield server
    server.kill()


def traced_calls(http_units: HttpUnits, tracer: trace.Tracer | None) -> tuple[list[str], str]:
    """The `traceparent` the server saw on two calls (the second on the reused connection),
    and the trace id of the span they were made in (empty without a tracer)."""

    async def scenario() -> tuple[list[str], str]:
        conns = McpConnections({"remote": define_mcp_connection(url=http_units.url, timeout=20)})
        try:
            if tracer is None:
                calls = [await conns.call_tool("remote", "trace_header", {}) for _ in range(2)]
                return [c["result"] for c in calls], ""
            seen = []
            for name in ("first", "second"):  # one span per call: each call carries its own
                with tracer.start_as_current_span(name) as span:
                    answer = await conns.call_tool("remote", "trace_header", {})
                trace_id = format(span.get_span_context().trace_id, "032x")
                seen.append((answer["result"], trace_id))
            assert seen[0][1] != seen[1][1]
            return [header.split("-")[1] if header else "" for header, _ in seen], ",".join(
                t for _, t in seen
            )
        finally:
            await conns.aclose()

    return asyncio.run(scenario())


def test_an_mcp_call_carries_its_spans_traceparent(
    http_units: HttpUnits, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = TracerProvider()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # what `telemetry.enabled` reads
    sent, trace_ids = traced_calls(http_units, provider.get_tracer("test"))
    assert ",".join(sent) == trace_ids
    provider.shutdown()


def test_an_mcp_call_sends_no_traceparent_with_tracing_off(http_units: HttpUnits) -> None:
    assert trace._TRACER_PROVIDER is None
    sent, _ = traced_calls(http_units, None)
    assert sent == ["", ""]
