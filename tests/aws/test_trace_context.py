"""The trace context crosses the Lambda dispatch: the payload TurnFunction receives carries
the API request's `traceparent` when tracing is on, and nothing more when it is off.

Run in a subprocess with `OTEL_EXPORTER_OTLP_ENDPOINT` at a local receiver (the SDK's
provider is process-wide, and this test process must stay untraced)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from agentkit.aws.dispatchers import turn_payload
from tests.server.otlp_receiver import Receiver, run_receiver

SCRIPT = textwrap.dedent(
    """
    import json

    from opentelemetry import trace

    from agentkit.aws.dispatchers import turn_payload
    from agentkit.engine import telemetry, trace_context
    from agentkit.server import otel

    provider = otel.configure()
    with trace.get_tracer("test").start_as_current_span("POST /v1/session"):
        first = json.loads(turn_payload("ses_1", "turn_1"))  # what ApiFunction sends


    def invocation(payload):
        # One TurnFunction invocation: the turn's span, then (continuing) the next dispatch.
        assert not trace.get_current_span().get_span_context().is_valid
        with trace_context.continued_from(payload.get("traceContext")):
            with telemetry.agent_span("helpdesk", conversation_id="ses_1", turn_id="turn_1"):
                pass
            return json.loads(turn_payload("ses_1", "turn_1"))


    second = invocation(first)
    invocation(second)
    provider.force_flush()
    print(json.dumps(first))
    """
)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from run_receiver()


def test_one_trace_spans_the_api_request_and_every_turn_invocation(receiver: Receiver) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(payload) == {"sessionId", "turnId", "traceContext"}
    assert payload["traceContext"]["traceparent"].startswith("00-")

    spans = receiver.wait_for(lambda got: len(got) >= 3)
    [api] = [s for s in spans if s.name == "POST /v1/session"]
    turns = [s for s in spans if s.name == "invoke_agent helpdesk"]
    assert len(turns) == 2
    assert {s.trace_id for s in turns} == {api.trace_id}
    # Each invocation hangs off the request that started the turn, not off each other.
    assert {s.parent_id for s in turns} == {api.span_id}
    assert payload["traceContext"]["traceparent"].split("-")[2] == api.span_id


def test_with_tracing_off_the_payload_is_only_the_ids() -> None:
    assert json.loads(turn_payload("ses_1", "turn_1")) == {"sessionId": "ses_1", "turnId": "turn_1"}
