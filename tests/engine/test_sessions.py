"""Sessions: follow-up rules, stop, duplicate dispatch, recovery after a restart."""

from __future__ import annotations

import asyncio

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.folds.conversation import fold_conversation
from agentkit.errors import Conflict, Forbidden, NotFound
from agentkit.events import ActionCall, ActionsRequested, MessageReceived, TurnStarted, draft
from agentkit.models.base import AssistantMessage, ModelRequest, UserMessage
from agentkit.models.scripted import ScriptedModel, Step, call, delay, text
from agentkit.project.digest import manifest_digest
from agentkit.sessions import SessionRecord, hash_token

from .conftest import ALICE, BOB, Env, check_vocabulary, settle
from .side_effects import deploy_calls


async def test_start_returns_a_plain_token_and_stores_only_its_hash(env: Env) -> None:
    rt = env.runtime([Step.text("hi")])
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    record = await rt.get_session(acc.session_id, principal=ALICE)
    assert acc.continuation_token.startswith("http:")
    assert record.token_hash == hash_token(acc.continuation_token)
    events = await rt.store.read(acc.session_id)
    assert events[0].data == {
        "channelId": "http",
        "mode": "chat",
        "principal": "alice",
        "agent": "proj",
        "manifestDigest": manifest_digest(rt.manifest),
    }
    assert events[1].as_(MessageReceived).message == "hello"
    assert events[1].turn_id == acc.turn_id


async def test_follow_up_rotates_the_token_and_sees_the_history(env: Env) -> None:
    model = ScriptedModel([Step.text("first"), Step.text("second")])
    rt = env.runtime(model)
    acc = await rt.start_session("one", principal=ALICE)
    await settle(rt)
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "two", principal=ALICE)
    await settle(rt)
    assert nxt.continuation_token != acc.continuation_token
    assert model.requests[1].messages == [
        UserMessage("one"),
        AssistantMessage(text="first"),
        UserMessage("two"),
    ]
    with pytest.raises(Conflict) as err:
        await rt.follow_up(acc.session_id, acc.continuation_token, "three", principal=ALICE)
    assert err.value.code == "stale_token"


async def test_follow_up_checks_the_owner(env: Env) -> None:
    rt = env.runtime([Step.text("hi")])
    acc = await rt.start_session("one", principal=ALICE)
    await settle(rt)
    with pytest.raises(Forbidden):
        await rt.follow_up(acc.session_id, acc.continuation_token, "x", principal=BOB)
    with pytest.raises(NotFound):
        await rt.follow_up("ses_doesnotexist_000000", acc.continuation_token, "x", principal=ALICE)
    with pytest.raises(NotFound):
        await rt.get_session("../../etc/passwd", principal=ALICE)


async def test_the_http_conversation_key_reaches_the_session_for_its_owner(env: Env) -> None:
    rt = env.runtime([Step.text("hi"), Step.text("again")])
    acc = await rt.start_session("one", principal=ALICE)
    await settle(rt)
    key = f"session:{acc.session_id}"
    with pytest.raises(Forbidden):
        await rt.follow_up_by_key("http", key, "x", principal=BOB)
    again = await rt.follow_up_by_key("http", key, "two", principal=ALICE)
    await settle(rt)
    assert again.session_id == acc.session_id
    events = await rt.store.read(acc.session_id)
    assert [e.data["message"] for e in events if e.type == "message.received"] == ["one", "two"]
    # The key names an HTTP conversation; on another channel it names nothing.
    with pytest.raises(NotFound):
        await rt.follow_up_by_key("webhook", key, "x", principal=ALICE)


async def test_task_sessions_are_not_followable(env: Env) -> None:
    rt = env.runtime([Step.text("report")])
    acc = await rt.start_session("run", principal=ALICE, mode="task")
    await settle(rt)
    with pytest.raises(Conflict) as err:
        await rt.follow_up(acc.session_id, acc.continuation_token, "more", principal=ALICE)
    assert err.value.code == "not_followable"


def blocking_step(gate: asyncio.Event) -> Step:
    def respond(request: ModelRequest) -> list:
        gate.set()
        return [*text("working "), delay(30), *text("never")]

    return Step.respond(respond)


async def test_follow_up_to_a_busy_session_interrupts_then_runs(env: Env) -> None:
    gate = asyncio.Event()
    rt = env.runtime(ScriptedModel([blocking_step(gate), Step.text("fresh answer")]))
    acc = await rt.start_session("slow", principal=ALICE)
    await gate.wait()
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "faster", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    ends = [(e.type, e.turn_id) for e in events if e.type in ("turn.failed", "turn.completed")]
    assert ends == [("turn.failed", acc.turn_id), ("turn.completed", nxt.turn_id)]
    assert next(e for e in events if e.type == "turn.failed").data["error"] == "turn interrupted"
    received = [e.index for e in events if e.type == "message.received"]
    first_end = next(e.index for e in events if e.type == "turn.failed")
    assert received[1] > first_end  # the new message lands after the old turn settled


async def test_racing_follow_ups_exactly_one_wins(env: Env) -> None:
    gate = asyncio.Event()
    rt = env.runtime(ScriptedModel([blocking_step(gate), Step.text("a"), Step.text("b")]))
    acc = await rt.start_session("slow", principal=ALICE)
    await gate.wait()
    outcomes = await asyncio.gather(
        *(
            rt.follow_up(acc.session_id, acc.continuation_token, f"m{i}", principal=ALICE)
            for i in range(3)
        ),
        return_exceptions=True,
    )
    await settle(rt)
    wins = [o for o in outcomes if not isinstance(o, BaseException)]
    losses = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(wins) == 1 and len(losses) == 2
    assert {o.code for o in losses} == {"session_busy"}
    events = await rt.store.read(acc.session_id)
    assert sum(1 for e in events if e.type == "message.received") == 2


async def test_busy_session_that_cannot_settle_answers_session_busy(env: Env) -> None:
    rt = env.runtime([Step.text("x")], settle_timeout=0.1)
    record = SessionRecord(
        id="ses_stuckstuckstuck0001", principal="alice", token_hash=hash_token("http:t")
    )
    await rt.store.create_session(record)
    await rt.store.append(record.id, [draft(MessageReceived(message="m"), turn_id="turn_a")])
    assert await rt.store.acquire_lease(record.id, "another-process", 60)
    with pytest.raises(Conflict) as err:
        await rt.follow_up(record.id, "http:t", "hello?", principal=ALICE)
    assert err.value.code == "session_busy"


async def test_a_turn_dispatched_twice_runs_once(env: Env) -> None:
    model = ScriptedModel([Step.tool_calls(call("add", {"a": 1, "b": 1})), Step.text("2")])
    rt = env.runtime(model)
    acc = await rt.start_session("add", principal=ALICE)
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.dispatch(acc.session_id, acc.turn_id)
    await dispatcher.dispatch(acc.session_id, acc.turn_id)
    await settle(rt)
    await rt.run_turn(acc.session_id, acc.turn_id)  # and once more after it finished
    events = await rt.store.read(acc.session_id)
    assert sum(1 for e in events if e.type == "turn.started") == 1
    assert sum(1 for e in events if e.type == "action.result") == 1
    assert len(model.requests) == 2


async def test_recover_fails_a_lost_turn_and_never_reruns_its_tool(env: Env) -> None:
    rt = env.runtime([Step.text("after restart")])
    record = SessionRecord(
        id="ses_lostlostlostlost0001", principal="alice", token_hash=hash_token("http:t")
    )
    await rt.store.create_session(record)
    requested = ActionsRequested(
        actions=[ActionCall(call_id="c9", tool_name="deploy", arguments={"env": "prod"})]
    )
    await rt.store.append(
        record.id,
        [
            draft(MessageReceived(message="go"), turn_id="turn_lost"),
            draft(TurnStarted(model="scripted"), turn_id="turn_lost"),
            draft(requested, turn_id="turn_lost"),
        ],
    )
    await rt.recover()
    await settle(rt)
    events = await rt.store.read(record.id)
    check_vocabulary(events)
    assert deploy_calls(rt) == []  # the tool itself never ran again
    assert [e.type for e in events[-3:]] == ["action.result", "turn.failed", "session.waiting"]
    assert events[-3].data["isError"] and "not re-run" in events[-3].data["error"]
    assert events[-2].data["error"].startswith("turn lost: the process running it stopped")
    # the session accepts a new message after recovery
    nxt = await rt.follow_up(record.id, "http:t", "again", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(record.id)
    assert events[-2].type == "turn.completed" and events[-2].turn_id == nxt.turn_id
    # the model never saw a dangling tool call
    assert fold_conversation(events)[1].tool_calls[0].id == "c9"  # type: ignore[union-attr]


async def test_recover_runs_an_accepted_turn_that_never_started(env: Env) -> None:
    rt = env.runtime([Step.text("late but fine")])
    record = SessionRecord(id="ses_queuedqueuedqueue01", principal="alice")
    await rt.store.create_session(record)
    await rt.store.append(record.id, [draft(MessageReceived(message="go"), turn_id="turn_q")])
    await rt.recover()
    await settle(rt)
    events = await rt.store.read(record.id)
    assert events[-2].type == "turn.completed" and events[-2].data["result"] == "late but fine"


async def test_recover_leaves_a_turn_whose_lease_is_live(env: Env) -> None:
    rt = env.runtime([Step.text("x")])
    record = SessionRecord(id="ses_livelivelivelive0001", principal="alice")
    await rt.store.create_session(record)
    await rt.store.append(
        record.id,
        [draft(MessageReceived(message="go"), turn_id="t1"), draft(TurnStarted(), turn_id="t1")],
    )
    assert await rt.store.acquire_lease(record.id, "someone-alive", 60)
    await rt.recover()
    await settle(rt)
    assert [e.type for e in await rt.store.read(record.id)] == ["message.received", "turn.started"]


async def test_workspace_is_seeded_with_instructions_skills_and_files(env: Env) -> None:
    rt = env.runtime([Step.text("ok")])
    acc = await rt.start_session("hi", principal=ALICE, workspace_files={"notes/todo.md": "- one"})
    await settle(rt)
    ws = rt.workspace(acc.session_id)
    assert (ws / "AGENTS.md").read_text().startswith("# Test agent")
    assert (ws / "seed.txt").read_text() == "seeded\n"
    assert (ws / ".agentkit/skills/checklist/SKILL.md").read_text().startswith("# Release")
    assert (ws / "notes/todo.md").read_text() == "- one"
    events = await rt.store.read(acc.session_id)
    assert events[1].data["workspaceFiles"] == ["notes/todo.md"]


@pytest.mark.parametrize("bad", ["/etc/passwd", "../escape.txt", "a/../../b", "", "a\\b"])
async def test_workspace_file_paths_must_stay_inside(env: Env, bad: str) -> None:
    from agentkit.errors import BadRequest

    rt = env.runtime([Step.text("ok")])
    with pytest.raises(BadRequest):
        await rt.start_session("hi", principal=ALICE, workspace_files={bad: "x"})


async def test_a_follow_up_from_another_process_interrupts_through_the_store(env: Env) -> None:
    gate = asyncio.Event()

    def trickle(request: ModelRequest) -> list:
        gate.set()
        parts: list = []
        for _ in range(200):
            parts += [*text("."), delay(0.02)]
        return parts

    running = env.runtime(ScriptedModel([Step.respond(trickle)]))
    other = env.runtime(ScriptedModel([Step.text("from the other process")]))
    acc = await running.start_session("slow", principal=ALICE)
    await gate.wait()
    nxt = await other.follow_up(acc.session_id, acc.continuation_token, "now", principal=ALICE)
    await settle(running)
    await settle(other)
    events = await other.store.read(acc.session_id)
    check_vocabulary(events)
    ends = [
        (e.type, e.turn_id, e.data.get("error"))
        for e in events
        if e.type.startswith("turn.") and e.type != "turn.started"
    ]
    assert ends == [
        ("turn.failed", acc.turn_id, "turn interrupted"),
        ("turn.completed", nxt.turn_id, None),
    ]
    assert not await other.store.interrupt_requested(acc.session_id)


async def test_a_stop_meant_for_a_lost_turn_does_not_hit_the_next_one(env: Env) -> None:
    rt = env.runtime([Step.text("fresh")])
    record = SessionRecord(
        id="ses_stalestalestale00001", principal="alice", token_hash=hash_token("http:t")
    )
    await rt.store.create_session(record)
    await rt.store.append(
        record.id,
        [draft(MessageReceived(message="go"), turn_id="t1"), draft(TurnStarted(), turn_id="t1")],
    )
    assert await rt.stop(record.id, principal=ALICE)  # nobody is running it
    await rt.recover()
    nxt = await rt.follow_up(record.id, "http:t", "again", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(record.id)
    assert events[-2].type == "turn.completed" and events[-2].turn_id == nxt.turn_id
