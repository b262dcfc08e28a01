"""`session_spend` keeps what it added up per session, without changing what it returns."""

from __future__ import annotations

from typing import Any

from agentkit.engine.turn.budget import SessionSpend, Spend, session_spend
from agentkit.events import Event

SESSION = "ses_spendspendspend01"


def stream(*specs: tuple[str, dict[str, Any], str | None]) -> list[Event]:
    return [
        Event(kind, i, SESSION, "2026-01-01T00:00:00Z", data, turn)
        for i, (kind, data, turn) in enumerate(specs)
    ]


def used(tokens: int, cost: float | None) -> dict[str, Any]:
    return {"usage": {"inputTokens": tokens}, **({"costUsd": cost} if cost is not None else {})}


def grant(call_id: str) -> dict[str, Any]:
    return {"callId": call_id, "decision": "approve", "principal": "alice"}


TURNS = stream(
    ("message.received", {"message": "one"}, "turn_1"),
    ("step.completed", {"step": 1, "durationMs": 1, **used(10, 0.01)}, "turn_1"),
    ("turn.completed", {"result": "a", **used(10, 0.01)}, "turn_1"),
    ("message.received", {"message": "two"}, "turn_2"),
    ("action.approval_resolved", grant("budget_1"), "turn_2"),
    ("step.completed", {"step": 1, "durationMs": 1, **used(20, None)}, "turn_2"),
    ("turn.failed", {"error": "x", **used(20, None)}, "turn_2"),
    ("message.received", {"message": "three"}, "turn_3"),
    ("action.approval_resolved", grant("budget_2"), "turn_3"),
    ("step.completed", {"step": 1, "durationMs": 1, **used(5, 0.002)}, "turn_3"),
)


def from_scratch(events: list[Event], turn_id: str) -> SessionSpend:
    return session_spend(iter(events), turn_id)  # an iterator is never served from the cache


def test_every_prefix_adds_up_as_from_scratch() -> None:
    growing: list[Event] = []
    for event in TURNS:
        growing.append(event)
        for turn in ("turn_1", "turn_2", "turn_3"):
            assert session_spend(growing, turn) == from_scratch(growing, turn)


def test_each_turn_gets_its_own_answer_from_the_same_events() -> None:
    third = session_spend(TURNS, "turn_3")
    second = session_spend(TURNS, "turn_2")

    assert third.before == Spend(30, None)  # turn 2's unknown price makes the sum unknown
    assert (third.session_grants, third.turn_grants) == (2, 1)
    assert second.before == Spend(10, 0.01)  # its own spend is not "before" it
    assert (second.session_grants, second.turn_grants) == (2, 1)
    assert third.last_step == second.last_step == Spend(5, 0.002)


def test_a_shorter_stream_after_a_longer_one_adds_up_as_from_scratch() -> None:
    session_spend(TURNS, "turn_3")
    prefix = TURNS[:3]

    assert (
        session_spend(prefix, "turn_2")
        == from_scratch(prefix, "turn_2")
        == SessionSpend(Spend(10, 0.01), Spend(10, 0.01), 0, 0)
    )


def test_a_different_stream_of_the_same_session_is_added_afresh() -> None:
    session_spend(TURNS, "turn_3")
    rewritten = stream(
        ("message.received", {"message": "one"}, "turn_1"),
        ("turn.completed", {"result": "a", **used(99, 0.5)}, "turn_1"),
        *[(e.type, e.data, e.turn_id) for e in TURNS[3:]],
    )

    assert session_spend(rewritten, "turn_3") == from_scratch(rewritten, "turn_3")
    assert session_spend(rewritten, "turn_3").before.tokens == 119


def test_only_turn_and_session_limits_make_the_spend_count() -> None:
    from agentkit.costs import Budget
    from agentkit.engine.turn.budget import limits_spend

    assert not limits_spend(Budget())
    assert not limits_spend(Budget(principal_daily_tokens=10, principal_daily_usd=1.0))
    for limit in ("turn_tokens", "turn_usd", "session_tokens", "session_usd"):
        assert limits_spend(Budget(**{limit: 1})), limit
