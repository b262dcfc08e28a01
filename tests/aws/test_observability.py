"""Powertools wiring: turn metrics in embedded metric format, ids on every log line."""

from __future__ import annotations

import io
import json

import pytest

from agentkit.aws import observability
from agentkit.aws.host import MetricsFanout
from agentkit.events import Event
from agentkit.sessions import SessionRecord


def _event(kind: str, index: int, data: dict[str, object]) -> Event:
    return Event.from_wire(
        {
            "type": kind,
            "index": index,
            "sessionId": "ses_EXAMPLEexample00000000",
            "turnId": "turn_1",
            "at": "2026-11-29T20:00:00.000Z",
            "data": data,
        }
    )


def test_turns_failures_and_tokens_become_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    fanout = MetricsFanout(observability.record_turn_metrics)
    record = SessionRecord(id="ses_EXAMPLEexample00000000")
    fanout.publish(record, [_event("step.started", 0, {})])  # nothing to count
    assert not observability.metrics().metric_set
    fanout.publish(
        record,
        [
            _event(
                "turn.completed",
                1,
                {"result": "ok", "usage": {"inputTokens": 812, "outputTokens": 24}},
            ),
            _event("turn.failed", 2, {"error": "boom"}),
        ],
    )
    observability.metrics().flush_metrics()
    emitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    def value(name: str) -> float:
        raw = emitted[name]
        return float(sum(raw) if isinstance(raw, list) else raw)

    assert value("TurnsCompleted") == 1
    assert value("TurnsFailed") == 1
    assert value("InputTokens") == 812 and value("OutputTokens") == 24


def test_log_lines_carry_session_and_turn_ids() -> None:
    log = observability.logger()
    out = io.StringIO()
    previous = log.registered_handler.setStream(out)
    try:
        observability.bind_turn("ses_EXAMPLEexample00000000", "turn_1")
        log.info("hello")
    finally:
        log.registered_handler.setStream(previous)
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["sessionId"] == "ses_EXAMPLEexample00000000"
    assert line["turnId"] == "turn_1"
    log.remove_keys(["sessionId", "turnId"])
