"""`on_busy="queue"` inside the engine: the queue drains when a turn ends, after a restart
too, and a queued message becomes part of the conversation only when its turn starts."""

from __future__ import annotations

from typing import Any

from agentkit.engine.on_busy import drain_queue, pending_queue
from agentkit.events import MessageQueued, TurnStarted, draft
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.sessions import Principal
from tests.engine.conftest import Env, check_vocabulary, settle

OWNER = Principal("channel:drive")


class Held:
    """A dispatcher that keeps turns until the test runs them."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.turns.append((session_id, turn_id))


async def test_queued_messages_run_in_order_after_the_turn(env: Env) -> None:
    held = Held()
    rt = env.runtime([Step.text("one"), Step.text("two"), Step.text("three")], dispatcher=held)
    first = await rt.start_session(
        "first", principal=OWNER, channel_id="drive", continuation_key="k"
    )
    # The first turn is dispatched but not run: the session is busy.
    a = await rt.follow_up_by_key("drive", "k", "second", principal=OWNER, on_busy="queue")
    b = await rt.follow_up_by_key("drive", "k", "third", principal=OWNER, on_busy="queue")
    events = await rt.store.read(first.session_id)
    assert [e.data["queueId"] for e in pending_queue(events)] == [a.turn_id, b.turn_id]
    assert held.turns == [(first.session_id, first.turn_id)]
    # Running a turn drains one queued message (the oldest), whose turn drains the next.
    for expected in (a.turn_id, b.turn_id):
        sid, turn = held.turns.pop(0)
        await rt.run_turn(sid, turn)
        assert held.turns == [(first.session_id, expected)]
    await rt.run_turn(*held.turns.pop(0))
    events = await rt.store.read(first.session_id)
    check_vocabulary(events)
    received = [e.data["message"] for e in events if e.type == "message.received"]
    assert received == ["first", "second", "third"]
    results = [e.data["result"] for e in events if e.type == "turn.completed"]
    assert results == ["one", "two", "three"]
    assert not pending_queue(events)


async def test_a_queue_left_by_a_dead_process_drains_on_recovery(env: Env) -> None:
    rt = env.runtime([Step.text("one"), Step.text("two")])
    started = await rt.start_session("first", principal=OWNER, channel_id="drive")
    await settle(rt)
    record = await rt.store.get_session(started.session_id)
    assert record is not None
    queued = MessageQueued(queue_id="turn_leftover", message="left behind", principal=OWNER.id)
    await rt.store.append(record.id, [draft(queued)])  # the process died before draining
    again = env.runtime([Step.text("two")])
    await again.recover()
    await settle(again)
    events = await again.store.read(record.id)
    received = [e for e in events if e.type == "message.received"]
    assert received[-1].data["message"] == "left behind"
    assert received[-1].turn_id == "turn_leftover"
    assert [e.data["result"] for e in events if e.type == "turn.completed"][-1] == "two"
    assert await drain_queue(again, record.id) is False  # nothing left


async def test_queued_text_is_not_in_the_conversation_until_its_turn(env: Env) -> None:
    seen: list[Any] = []

    class Spy:
        def __init__(self) -> None:
            self.inner = ScriptedModel([Step.text("one"), Step.text("two")])

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def stream(self, request: Any) -> Any:
            seen.append([getattr(m, "text", None) for m in request.messages])
            return self.inner.stream(request)

    held = Held()
    rt = env.runtime(Spy(), dispatcher=held)
    first = await rt.start_session(
        "first", principal=OWNER, channel_id="drive", continuation_key="q"
    )
    await rt.follow_up_by_key("drive", "q", "second", principal=OWNER, on_busy="queue")
    await rt.run_turn(*held.turns.pop(0))
    await rt.run_turn(*held.turns.pop(0))
    assert "second" not in seen[0]
    assert seen[1][-1] == "second" and "one" in seen[1]
    assert first.session_id


async def test_a_queue_behind_a_turn_lost_in_a_crash_drains_on_recovery(env: Env) -> None:
    # The process died mid-turn with a message queued behind it: recovery ends the lost
    # turn, and the queued message becomes the next turn (its runner never drained it).
    held = Held()
    rt = env.runtime([Step.text("one")], dispatcher=held)
    started = await rt.start_session("first", principal=OWNER, channel_id="drive")
    lost_turn = started.turn_id
    await rt.store.append(started.session_id, [draft(TurnStarted(model="test"), turn_id=lost_turn)])
    queued = MessageQueued(queue_id="turn_behind", message="queued behind", principal=OWNER.id)
    await rt.store.append(started.session_id, [draft(queued)])
    again = env.runtime([Step.text("two")])
    await again.recover()
    await settle(again)
    events = await again.store.read(started.session_id)
    assert "turn.failed" in [e.type for e in events if e.turn_id == lost_turn]
    received = [e for e in events if e.type == "message.received"]
    assert [(e.data["message"], e.turn_id) for e in received][-1] == (
        "queued behind",
        "turn_behind",
    )
    assert [e.data["result"] for e in events if e.type == "turn.completed"] == ["two"]
    assert not pending_queue(events)
