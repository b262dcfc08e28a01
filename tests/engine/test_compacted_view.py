"""What the conversation fold makes of a `context.compacted` event (engine.compacted_view)."""

from __future__ import annotations

from typing import Any

from agentkit.engine.folds.conversation import fold_conversation, fold_turn
from agentkit.events import Event
from agentkit.models.base import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

SESSION = "ses_compactcompact0001"


def stream(*specs: tuple[str, dict[str, Any], str | None]) -> list[Event]:
    return [
        Event(kind, i, SESSION, "2026-01-01T00:00:00Z", data, turn)
        for i, (kind, data, turn) in enumerate(specs)
    ]


def calls(call_id: str, tool: str = "t") -> dict[str, Any]:
    return {"actions": [{"callId": call_id, "toolName": tool, "arguments": {}}]}


def turn(n: int, tool: str = "t") -> list[tuple[str, dict[str, Any], str | None]]:
    tid = f"turn_{n}"
    return [
        ("message.received", {"message": f"question {n}"}, tid),
        ("step.started", {"step": 1}, tid),
        ("actions.requested", calls(f"c{n}", tool), tid),
        ("action.result", {"callId": f"c{n}", "toolName": tool, "result": f"r{n}"}, tid),
        ("step.started", {"step": 2}, tid),
        ("message.completed", {"text": f"answer {n}"}, tid),
        ("turn.completed", {"result": f"answer {n}"}, tid),
    ]


def compacted(through: int, summary: str | None, **extra: Any) -> dict[str, Any]:
    data = {"throughIndex": through, "strategy": "summarize" if summary else "window"}
    data.update({"tokensBefore": 100, "tokensAfter": 10, **extra})
    if summary:
        data["summary"] = summary
    return data


def test_the_summary_stands_for_the_turns_through_the_index() -> None:
    events = stream(
        *turn(1),
        *turn(2),
        ("message.received", {"message": "question 3"}, "turn_3"),
        ("context.compacted", compacted(13, "they asked twice"), "turn_3"),
    )
    messages = fold_conversation(iter(events))
    assert messages == [
        UserMessage(
            "Summary of the earlier conversation (older turns were compacted):\n\nthey asked twice"
        ),
        UserMessage("question 3"),
    ]


def test_the_cut_falls_only_at_the_end_of_a_whole_turn() -> None:
    # An index in the middle of turn 2 compacts turn 1 only: turn 2's call keeps its result.
    events = stream(
        *turn(1),
        *turn(2),
        ("message.received", {"message": "question 3"}, "turn_3"),
        ("context.compacted", compacted(9, None), "turn_3"),
    )
    messages = fold_conversation(iter(events))
    assert isinstance(messages[0], UserMessage) and "dropped" in messages[0].text
    assert messages[1] == UserMessage("question 2")
    assert messages[2] == AssistantMessage(tool_calls=(ToolCall("c2", "t", {}),))
    assert messages[3] == ToolResultMessage("c2", "t", "r2")


def test_loaded_skills_survive_compaction_with_their_results() -> None:
    events = stream(
        *turn(1, tool="load_skill"),
        *turn(2),
        ("message.received", {"message": "question 3"}, "turn_3"),
        ("context.compacted", compacted(13, "summary"), "turn_3"),
    )
    messages = fold_conversation(iter(events))
    assert messages[1:3] == [
        AssistantMessage(tool_calls=(ToolCall("c1", "load_skill", {}),)),
        ToolResultMessage("c1", "load_skill", "r1"),
    ]
    assert ToolResultMessage("c2", "t", "r2") not in messages


def test_a_second_compaction_replaces_the_first_summary() -> None:
    events = stream(
        *turn(1),
        ("context.compacted", compacted(6, "first"), "turn_1"),
        *[(k, d, t) for k, d, t in turn(2)],
        ("context.compacted", compacted(14, "second"), "turn_2"),
        ("message.received", {"message": "question 3"}, "turn_3"),
    )
    messages = fold_conversation(iter(events))
    assert len(messages) == 2
    assert isinstance(messages[0], UserMessage) and messages[0].text.endswith("second")


def test_the_carried_fold_and_a_fresh_one_agree() -> None:
    events = stream(
        *turn(1),
        *turn(2),
        ("message.received", {"message": "question 3"}, "turn_3"),
        ("context.compacted", compacted(13, "s"), "turn_3"),
        ("step.started", {"step": 1}, "turn_3"),
        ("message.completed", {"text": "answer 3"}, "turn_3"),
    )
    for n in range(1, len(events) + 1):
        assert fold_conversation(events[:n]) == fold_conversation(iter(events[:n]))


def test_a_malformed_event_changes_nothing() -> None:
    base = stream(*turn(1), ("message.received", {"message": "q"}, "turn_2"))
    bad = stream(
        *turn(1),
        ("message.received", {"message": "q"}, "turn_2"),
        ("context.compacted", {"throughIndex": "six", "strategy": "window"}, "turn_2"),
    )
    assert fold_conversation(iter(bad)) == fold_conversation(iter(base))


def test_a_summary_call_counts_in_its_turn_usage_when_the_turn_is_folded_again() -> None:
    usage = {"inputTokens": 40, "outputTokens": 5}
    events = stream(
        ("message.received", {"message": "q"}, "turn_1"),
        ("context.compacted", compacted(0, "s", usage=usage, costUsd=0.5), "turn_1"),
        ("step.started", {"step": 1}, "turn_1"),
        ("step.completed", {"step": 1, "durationMs": 1, "usage": usage, "costUsd": 0.25}, "turn_1"),
        ("context.compacted", compacted(0, None), "turn_1"),  # window: no call, no cost
    )
    state = fold_turn(events, "turn_1")
    assert state.usage.input_tokens == 80 and state.usage.output_tokens == 10
    assert state.cost_usd == 0.75
