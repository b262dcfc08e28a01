"""The conversation fold reuses what it folded before without changing what it returns."""

from __future__ import annotations

from typing import Any

from agentkit.engine.folds.conversation import fold_conversation
from agentkit.events import Event
from agentkit.models.base import AssistantMessage, ToolResultMessage, UserMessage

SESSION = "ses_foldfoldfoldfold01"


def stream(*specs: tuple[str, dict[str, Any], str | None]) -> list[Event]:
    return [
        Event(kind, i, SESSION, "2026-01-01T00:00:00Z", data, turn)
        for i, (kind, data, turn) in enumerate(specs)
    ]


def call(call_id: str) -> dict[str, Any]:
    return {"actions": [{"callId": call_id, "toolName": "t", "arguments": {"n": 1}}]}


THREE_TURNS = stream(
    ("message.received", {"message": "one"}, "turn_1"),
    ("step.started", {"step": 1}, "turn_1"),
    ("actions.requested", call("c1"), "turn_1"),
    ("action.result", {"callId": "c1", "toolName": "t", "result": 2}, "turn_1"),
    ("step.started", {"step": 2}, "turn_1"),
    ("message.completed", {"text": "two"}, "turn_1"),
    ("turn.completed", {"result": "two"}, "turn_1"),
    ("message.received", {"message": "again"}, "turn_2"),
    ("step.started", {"step": 1}, "turn_2"),
    ("actions.requested", call("c2"), "turn_2"),  # its process died: no result
    ("message.received", {"message": "still there?"}, "turn_3"),
    ("step.started", {"step": 1}, "turn_3"),
    ("message.completed", {"text": "yes"}, "turn_3"),
)


def fold_from_scratch(events: list[Any]) -> list[Any]:
    return fold_conversation(iter(events))  # an iterator is never served from the cache


def test_every_prefix_folds_as_a_fresh_fold_would() -> None:
    growing: list[Any] = []
    for event in THREE_TURNS:
        growing.append(event)
        assert fold_conversation(growing) == fold_from_scratch(growing)


def test_a_call_left_open_by_an_earlier_turn_gets_its_error_result() -> None:
    fold_conversation(THREE_TURNS[:8])  # leaves a cached prefix behind

    messages = fold_conversation(THREE_TURNS)

    assert messages[-4:] == [
        AssistantMessage(text="", tool_calls=messages[-4].tool_calls),
        ToolResultMessage("c2", "t", "no result was recorded for this tool call", True),
        UserMessage("still there?"),
        AssistantMessage(text="yes"),
    ]


def test_a_different_stream_of_the_same_session_is_folded_afresh() -> None:
    fold_conversation(THREE_TURNS)
    rewritten = stream(
        ("message.received", {"message": "other"}, "turn_1"),
        *[(e.type, e.data, e.turn_id) for e in THREE_TURNS[1:]],
    )

    assert fold_conversation(rewritten)[0] == UserMessage("other")


def test_a_shorter_stream_after_a_longer_one_folds_as_a_fresh_fold_would() -> None:
    fold_conversation(THREE_TURNS)
    prefix = THREE_TURNS[:6]

    assert fold_conversation(prefix) == fold_from_scratch(prefix)


def test_an_open_call_closed_for_one_fold_gets_its_real_result_in_the_next() -> None:
    # The first fold answers the open call c1 with an error result (so the model sees a
    # well-formed dialogue); that answer must not stay in what is kept for the next fold.
    growing = list(THREE_TURNS[:3])
    first = fold_conversation(growing)
    assert first[-1] == ToolResultMessage(
        "c1", "t", "no result was recorded for this tool call", True
    )

    growing.append(THREE_TURNS[3])
    assert fold_conversation(growing)[-1] == ToolResultMessage("c1", "t", "2")


def test_changing_a_returned_fold_does_not_change_the_next() -> None:
    first = fold_conversation(THREE_TURNS)
    expected = list(first)
    first.clear()

    assert fold_conversation(THREE_TURNS) == expected
