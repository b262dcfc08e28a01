"""Each assertion over a trajectory: passes on the events that satisfy it, says why not."""

from __future__ import annotations

from typing import Any

import pytest

from agentkit.authoring.evals import Trajectory
from agentkit.evals import (
    advance,
    approval_requested,
    approve,
    call_tool,
    called_tool,
    define_eval,
    deny,
    did_not_call,
    interrupt,
    message_received,
    reply_contains,
    reply_matches,
    say,
    stream_intact,
    succeeded,
    turns_completed,
)
from agentkit.events import Event


def ev(index: int, type_: str, **data: Any) -> Event:
    return Event(type=type_, index=index, session_id="s", at="2030-01-07T00:00:00.000Z", data=data)


EVENTS = (
    ev(0, "session.started"),
    ev(1, "message.received", message="Weather in Paris?", source="eval"),
    ev(2, "turn.started"),
    ev(
        3,
        "actions.requested",
        actions=[{"callId": "c1", "toolName": "get_weather", "arguments": {"city": "Paris"}}],
    ),
    ev(4, "action.approval_requested", callId="c2", toolName="wipe_notes"),
    ev(5, "action.result", callId="c1", toolName="get_weather", result={"tempC": 21}),
    ev(6, "message.completed", text="Paris: 21C and sunny."),
    ev(7, "turn.completed", result="ok"),
    ev(8, "message.received", message="Check CI again.", source="reminder"),
    ev(9, "turn.completed", result="ok"),
)
T = Trajectory(events=EVENTS)


def outcome(assertion: Any, t: Trajectory = T) -> Any:
    return assertion(t)


def test_called_tool_and_did_not_call() -> None:
    assert outcome(called_tool("get_weather")) is True
    assert outcome(called_tool("get_weather", city="Paris")) is True
    assert "tools called: get_weather" in outcome(called_tool("get_weather", city="Rome"))
    assert outcome(did_not_call("wipe_notes")) is True
    assert outcome(did_not_call("get_weather")) == "get_weather was called"


def test_reply_contains_and_matches() -> None:
    assert outcome(reply_contains("SUNNY")) is True
    assert "does not contain 'SUNNY'" in outcome(reply_contains("SUNNY", case_sensitive=True))
    assert outcome(reply_matches(r"\d+C")) is True
    assert outcome(reply_matches(r"^Rome")) == "reply does not match /^Rome/"


def test_succeeded() -> None:
    assert outcome(succeeded()) is True
    failed = Trajectory(events=(*EVENTS, ev(10, "turn.failed", error="boom")))
    assert outcome(succeeded(), failed) == "the turn failed"


def test_approval_requested() -> None:
    assert outcome(approval_requested("wipe_notes")) is True
    assert "asked: ['wipe_notes']" in outcome(approval_requested("approve_pr"))


def test_message_received_by_source_and_text() -> None:
    assert outcome(message_received(source="reminder")) is True
    assert outcome(message_received(source="reminder", contains="ci again")) is True
    assert outcome(message_received(contains="Paris")) is True
    miss = outcome(message_received(source="schedule"))
    assert "sources: ['eval', 'reminder']" in miss
    assert isinstance(outcome(message_received(source="eval", contains="CI")), str)


def test_turns_completed() -> None:
    assert outcome(turns_completed(2)) is True
    assert outcome(turns_completed(1)) == "expected 1 completed turn(s), got 2"


def test_stream_intact_catches_gaps_duplicates_and_altered_events() -> None:
    whole = Trajectory(events=EVENTS, streamed=EVENTS)
    assert outcome(stream_intact(), whole) is True
    assert "nothing was streamed" in outcome(stream_intact())
    gap = Trajectory(events=EVENTS, streamed=(*EVENTS[:3], *EVENTS[4:]))
    assert "gap" in outcome(stream_intact(), gap)
    dup = Trajectory(events=EVENTS, streamed=(*EVENTS[:4], EVENTS[3], *EVENTS[4:]))
    assert "duplicate" in outcome(stream_intact(), dup)
    changed = (*EVENTS[:6], ev(6, "message.completed", text="forged"), *EVENTS[7:])
    assert "differ" in outcome(stream_intact(), Trajectory(events=EVENTS, streamed=changed))


def test_check_collects_every_failure_kind() -> None:
    def raises(t: Trajectory) -> None:
        raise AssertionError("custom says no")

    case = define_eval(
        message="x",
        assertions=[raises, lambda t: False, lambda t: "a message", lambda t: None, succeeded()],
    )
    failures = case.check(T)
    assert failures == ["custom says no", "<lambda> failed", "a message"]


def test_steps_are_validated_when_defined() -> None:
    case = define_eval(
        steps=[
            "hi",
            say("more", cut_after=2),
            interrupt("stop"),
            approve(),
            deny("x"),
            advance("2h"),
            call_tool("t", a=1),
        ]
    )
    assert case.messages == ("hi", "more")
    assert len(case.script) == 7
    with pytest.raises(ValueError, match="exactly one"):
        define_eval(message="x", steps=["y"])
    with pytest.raises(ValueError, match="start with a message"):
        define_eval(steps=[advance("1h")])
    with pytest.raises(TypeError):
        define_eval(steps=["x", 42])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        say("x", cut_after=0)
    with pytest.raises(ValueError):
        define_eval(message="x", trials=0)
    assert define_eval(message="x", trials="auto").trials == "auto"
