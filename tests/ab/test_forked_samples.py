"""A fork's copy of its original's turns was sampled in the original: only the fork's own
turns add A/B samples."""

from __future__ import annotations

from typing import Any

from agentkit.ab.fold import SessionFolder
from agentkit.events import Event

SID = "ses_forkforkforkfork1"


def ev(index: int, type: str, data: dict[str, Any], turn: str | None = None) -> Event:
    return Event(type, index, SID, f"2026-01-01T00:00:0{index}.000Z", data, turn)


def test_only_the_forks_own_turns_are_sampled() -> None:
    folder = SessionFolder(SID)
    samples = folder.add_all(
        [
            ev(0, "session.forked", {"fromSessionId": "ses_original0000001", "atIndex": 4}),
            ev(1, "session.started", {"channelId": "http", "mode": "chat"}),
            ev(2, "ab.assigned", {"experiment": "tone", "variant": "warm"}),
            ev(3, "message.received", {"message": "hi"}, "turn_a"),
            ev(4, "turn.completed", {"result": "hello"}, "turn_a"),
            ev(5, "session.waiting", {}, "turn_a"),
            ev(6, "message.received", {"message": "again"}, "turn_b"),
            ev(7, "turn.completed", {"result": "hello again"}, "turn_b"),
        ]
    )
    assert [s.turn_id for s in samples] == ["turn_b"]
