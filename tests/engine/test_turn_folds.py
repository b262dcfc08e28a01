"""The per-turn reads (a turn's state, when its clock started, the queue) look only at the
recent part of a long stream, and answer exactly as a read of the whole stream would."""

from __future__ import annotations

from typing import Any

from agentkit.engine.folds.conversation import fold_turn
from agentkit.engine.on_busy import pending_queue
from agentkit.engine.turn.deps import turn_began
from agentkit.events import Event

SESSION = "ses_turnfoldturnfold01"
TURNS = ("turn_1", "turn_2", "turn_3", "turn_q1", "turn_q2", "turn_never")


def stream(*specs: tuple[str, dict[str, Any], str | None]) -> list[Event]:
    return [
        Event(kind, i, SESSION, f"2026-01-01T00:00:{i:02d}Z", data, turn)
        for i, (kind, data, turn) in enumerate(specs)
    ]


def call(call_id: str) -> dict[str, Any]:
    return {"actions": [{"callId": call_id, "toolName": "t", "arguments": {"n": 1}}]}


SPECS: list[tuple[str, dict[str, Any], str | None]] = [
    ("message.received", {"message": "one"}, "turn_1"),
    ("turn.started", {}, "turn_1"),
    ("step.started", {"step": 1}, "turn_1"),
    ("actions.requested", call("c1"), "turn_1"),
    ("action.result", {"callId": "c1", "toolName": "t", "result": 2}, "turn_1"),
    ("step.completed", {"usage": {"inputTokens": 3, "outputTokens": 4}}, "turn_1"),
    ("turn.completed", {"result": "two"}, "turn_1"),
    ("message.received", {"message": "again"}, "turn_2"),
    ("turn.started", {}, "turn_2"),
    ("message.queued", {"queueId": "turn_q1", "message": "later"}, None),
    ("step.started", {"step": 1}, "turn_2"),
    ("actions.requested", call("c2"), "turn_2"),
    ("action.approval_requested", {"callId": "c2", "arguments": {"n": 1}}, "turn_2"),
    ("message.queued", {"queueId": "turn_q2", "message": "even later"}, None),
    ("action.approval_resolved", {"callId": "c2", "decision": "approve"}, "turn_2"),
    ("action.started", {"callId": "c2"}, "turn_2"),
    ("action.result", {"callId": "c2", "toolName": "t", "result": 3}, "turn_2"),
    ("turn.completed", {"result": "three"}, "turn_2"),
    ("message.received", {"message": "later", "queueId": "turn_q1"}, "turn_q1"),
    ("turn.started", {}, "turn_q1"),
    ("message.received", {"message": "stop that"}, "turn_3"),
]
EVENTS = stream(*SPECS)


def test_a_turns_state_over_every_prefix_is_the_state_of_a_whole_read() -> None:
    growing: list[Event] = []
    for event in EVENTS:
        growing.append(event)
        for turn_id in TURNS:
            assert fold_turn(growing, turn_id) == fold_turn(iter(growing), turn_id)


def test_a_turns_clock_over_every_prefix_starts_where_a_whole_read_says() -> None:
    growing: list[Event] = []
    for event in EVENTS:
        growing.append(event)
        for turn_id in TURNS:
            assert turn_began(growing, turn_id) == turn_began(list(iter(growing)), turn_id)


def test_a_parked_turns_clock_restarts_at_its_decision() -> None:
    assert turn_began(EVENTS, "turn_2") == turn_began(EVENTS[14:15], "turn_2")
    assert turn_began(EVENTS, "turn_never") is None


def test_the_queue_over_every_prefix_is_the_queue_of_a_whole_read() -> None:
    growing: list[Event] = []
    seen: list[list[str]] = []
    for event in EVENTS:
        growing.append(event)
        carried = [e.data["queueId"] for e in pending_queue(growing)]
        assert carried == [e.data["queueId"] for e in pending_queue(iter(growing))]
        seen.append(carried)
    assert ["turn_q1", "turn_q2"] in seen
    assert seen[-1] == ["turn_q2"]  # q1 was accepted as a turn


def test_a_rewritten_stream_of_the_same_session_is_read_afresh() -> None:
    fold_turn(EVENTS, "turn_1")
    pending_queue(EVENTS)
    # Same session, same length, different events: nothing kept from the first may leak in.
    rewritten = stream(
        ("message.queued", {"queueId": "turn_1", "message": "one"}, None),
        *SPECS[1:],
    )

    assert fold_turn(rewritten, "turn_1").received is False
    assert [e.data["queueId"] for e in pending_queue(rewritten)] == ["turn_1", "turn_q2"]
    assert fold_turn(rewritten, "turn_2") == fold_turn(iter(rewritten), "turn_2")
