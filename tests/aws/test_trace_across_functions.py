"""One trace across the deployed functions, through their real handlers on moto: an API
Gateway event with a `traceparent` into ApiFunction, the payload it dispatches into
TurnFunction, and the turn's `invoke_agent` span in the caller's trace, under the HTTP span;
then the events table's stream, read through the Streams API, into HooksFunction, whose
`deliver_hooks` span joins the same trace.

The tracer provider is the test's own, with an in-memory exporter, installed for the test
only (the API's global and the engine's cached tracer are restored after it), so the rest of
this process stays untraced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agentkit.aws.handlers import hooks, scheduler
from agentkit.engine import telemetry
from agentkit.models.scripted import Step
from agentkit.version import __version__
from tests.aws.conftest import FakeContext, Stack, script
from tests.aws.test_flow import api_call
from tests.aws.test_scheduler import lost_turn_record

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # what `telemetry.enabled` reads
    # The engine's proxy tracer keeps the first real tracer it finds: give it this one.
    monkeypatch.setattr(telemetry, "_tracer", provider.get_tracer("agentkit", __version__))
    yield exporter
    provider.shutdown()


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def create_session(traceparent: str | None) -> dict[str, Any]:
    headers = {"traceparent": traceparent} if traceparent is not None else None
    response = api_call("api/create-session.json", headers=headers)
    assert response["statusCode"] == 200, response
    return response


def test_one_trace_spans_the_api_and_turn_functions(
    aws_stack: Stack, spans: InMemorySpanExporter
) -> None:
    script(aws_stack, Step.text("Traced."))
    create_session(TRACEPARENT)
    [payload] = aws_stack.dispatcher.payloads
    assert payload["traceContext"]["traceparent"].split("-")[1] == TRACE_ID

    [result] = aws_stack.run_turns()
    assert result["ok"] is True

    finished = spans.get_finished_spans()
    [server] = [s for s in finished if s.kind == SpanKind.SERVER]
    [turn] = [s for s in finished if s.name.startswith("invoke_agent")]
    assert hex_trace(server) == TRACE_ID
    assert server.parent is not None and format(server.parent.span_id, "016x") == CALLER_SPAN
    assert hex_trace(turn) == TRACE_ID
    # The turn hangs off the span the request was served in, across the invoke.
    assert turn.parent is not None
    assert (
        format(turn.parent.span_id, "016x") == payload["traceContext"]["traceparent"].split("-")[2]
    )
    assert turn.parent.span_id in {s.context.span_id for s in finished if s.context}
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.conversation.id"] == payload["sessionId"]
    assert turn.attributes["agentkit.turn.outcome"] == "completed"
    chats = [s for s in finished if s.name.startswith("chat")]
    assert chats and {hex_trace(s) for s in chats} == {TRACE_ID}


def test_without_a_traceparent_the_turn_still_joins_the_requests_own_trace(
    aws_stack: Stack, spans: InMemorySpanExporter
) -> None:
    script(aws_stack, Step.text("Traced."))
    create_session(None)
    aws_stack.run_turns()
    finished = spans.get_finished_spans()
    [server] = [s for s in finished if s.kind == SpanKind.SERVER]
    [turn] = [s for s in finished if s.name.startswith("invoke_agent")]
    assert server.parent is None
    assert hex_trace(turn) == hex_trace(server) != TRACE_ID


def test_hooks_are_delivered_in_the_trace_of_the_turn_that_recorded_the_events(
    aws_stack: Stack, spans: InMemorySpanExporter
) -> None:
    script(aws_stack, Step.text("Traced."))
    create_session(TRACEPARENT)
    [payload] = aws_stack.dispatcher.payloads
    aws_stack.run_turns()
    records = aws_stack.stream_records()
    assert all("traceContext" in r["dynamodb"]["NewImage"] for r in records)

    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}
    delivered = [c["index"] for c in aws_stack.hook_calls()]
    assert delivered == list(range(len(records)))

    finished = spans.get_finished_spans()
    deliveries = [s for s in finished if s.name == "deliver_hooks"]
    assert deliveries and {hex_trace(s) for s in deliveries} == {TRACE_ID}
    recorded_in = {s.context.span_id for s in finished if s.context}
    assert all(s.parent is not None and s.parent.span_id in recorded_in for s in deliveries)
    # One delivery for the session's one turn, with the events around it.
    [delivery] = deliveries
    assert delivery.attributes is not None
    assert delivery.attributes["agentkit.hooks.events"] == len(records)
    assert delivery.attributes["agentkit.turn.id"] == payload["turnId"]
    assert delivery.attributes["gen_ai.conversation.id"] == payload["sessionId"]


def test_each_turn_of_a_batch_is_delivered_in_its_own_trace(
    aws_stack: Stack, spans: InMemorySpanExporter
) -> None:
    script(aws_stack, Step.text("One."), Step.text("Two."))
    created = json.loads(create_session(TRACEPARENT)["body"])
    aws_stack.run_turns()
    other_trace = "0af7651916cd43dd8448eb211c80319c"
    followed = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{created['sessionId']}",
        body={"continuationToken": created["continuationToken"], "message": "2?"},
        headers={"traceparent": f"00-{other_trace}-{CALLER_SPAN}-01"},
    )
    assert followed["statusCode"] == 200, followed
    aws_stack.run_turns()

    records = aws_stack.stream_records()  # both turns in one batch
    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}
    deliveries = [s for s in spans.get_finished_spans() if s.name == "deliver_hooks"]
    assert [hex_trace(s) for s in deliveries] == [TRACE_ID, other_trace]
    assert sum(int(str((s.attributes or {})["agentkit.hooks.events"])) for s in deliveries) == len(
        records
    )


def test_untraced_events_carry_no_trace_context(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Not traced."))
    create_session(TRACEPARENT)
    aws_stack.run_turns()
    records = aws_stack.stream_records()
    assert records and not any("traceContext" in r["dynamodb"]["NewImage"] for r in records)
    assert hooks.handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}
    assert len(aws_stack.hook_calls()) == len(records)


def test_a_turn_lambda_gave_up_on_ends_in_a_failed_turn_span(
    aws_stack: Stack, spans: InMemorySpanExporter
) -> None:
    created = create_session(TRACEPARENT)
    session_id = json.loads(created["body"])["sessionId"]
    turn_id = aws_stack.dispatcher.payloads.pop()["turnId"]  # every attempt of it died
    answer = scheduler.handler(lost_turn_record(session_id, turn_id), FakeContext())
    assert answer["recorded"] is True

    [turn] = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.conversation.id"] == session_id
    assert turn.attributes["agentkit.turn.id"] == turn_id
    assert turn.attributes["agentkit.turn.outcome"] == "failed"
    assert "RetriesExhausted" in str(turn.attributes["agentkit.turn.error"])
