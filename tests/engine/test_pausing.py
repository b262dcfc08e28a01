"""Pause, resume and kill one session (`engine.pausing`), and the agent's kill switch.

Against the memory and file stores (the `env` fixture); the cross-invocation case also on
DynamoDB (a moto server over HTTP).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.engine.fleet_switch import FileSwitch
from agentkit.engine.pausing import AgentPaused
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.turn.deadline import Deadline
from agentkit.errors import Conflict, Forbidden
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import SessionStatus
from agentkit.store.base import Store
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, BOB, FILES, Env, check_vocabulary, settle, types, write_project


def replies(n: int) -> list[Step]:
    return [Step.text(f"reply {i}") for i in range(n)]


async def until(check: Callable[[], Any], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def idle_session(env: Env, model: ScriptedModel) -> tuple[AgentRuntime, str, str]:
    rt = env.runtime(model)
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    return rt, acc.session_id, acc.continuation_token


async def test_a_second_pause_records_nothing(env: Env) -> None:
    rt, sid, _ = await idle_session(env, ScriptedModel(replies(1)))
    first = await rt.pause(sid, principal=ALICE)
    second = await rt.pause(sid, principal=ALICE)
    assert (first.status, first.changed) == ("paused", True)
    assert (second.status, second.changed) == ("paused", False)
    events = await rt.store.read(sid)
    check_vocabulary(events)
    assert types(events).count("session.paused") == 1
    assert events[-1].data == {"by": "alice"}


async def test_a_paused_session_refuses_follow_ups_until_resumed(env: Env) -> None:
    rt, sid, token = await idle_session(env, ScriptedModel(replies(2)))
    await rt.pause(sid, principal=ALICE)
    with pytest.raises(Conflict) as refused:
        await rt.follow_up(sid, token, "are you there?", principal=ALICE)
    assert (refused.value.status, refused.value.code) == (409, "session_paused")
    with pytest.raises(Conflict):
        await rt.deliver(sid, "a reminder")
    resumed = await rt.resume(sid, principal=ALICE)
    assert (resumed.status, resumed.changed) == ("running", True)
    assert not (await rt.resume(sid, principal=ALICE)).changed
    await rt.follow_up(sid, token, "are you there?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(sid)
    assert types(events).count("turn.completed") == 2
    assert types(events).count("session.resumed") == 1


async def test_a_paused_session_refuses_approvals(env: Env) -> None:
    model = ScriptedModel(
        [Step.tool_calls(call("deploy", {"env": "prod"}, id="d1")), Step.text("deployed")]
    )
    rt, sid, _ = await idle_session(env, model)
    assert await rt.session_status(sid) == SessionStatus.AWAITING_APPROVAL
    await rt.pause(sid, principal=ALICE)
    # The parked turn stays parked: its approval waits for the resume.
    assert await rt.session_status(sid) == SessionStatus.AWAITING_APPROVAL
    with pytest.raises(Conflict) as refused:
        await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    assert refused.value.code == "session_paused"
    await rt.resume(sid, principal=ALICE)
    await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(sid)
    assert events[-2].type == "turn.completed"
    assert events[-2].data["result"] == "deployed"


async def test_pausing_a_running_turn_cancels_its_model_call(env: Env) -> None:
    model = ScriptedModel([Step.delay(60.0), Step.text("never")])
    rt = env.runtime(model)
    acc = await rt.start_session("think hard", principal=ALICE)
    await until(lambda: _true(len(model.requests) == 1))
    await rt.pause(acc.session_id, principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    failed = [e for e in events if e.type == "turn.failed"]
    assert [e.data["error"] for e in failed] == ["session paused"]
    assert len(model.requests) == 1


async def test_a_stranger_may_not_pause_resume_or_kill(env: Env) -> None:
    rt, sid, _ = await idle_session(env, ScriptedModel(replies(1)))
    for action in (rt.pause, rt.resume, rt.kill):
        with pytest.raises(Forbidden):
            await action(sid, principal=BOB)
    assert "session.paused" not in types(await rt.store.read(sid))


async def test_kill_ends_the_stream_with_session_failed_killed(env: Env) -> None:
    model = ScriptedModel([Step.delay(60.0), Step.text("never")])
    rt = env.runtime(model)
    acc = await rt.start_session("think hard", principal=ALICE)
    await until(lambda: _true(len(model.requests) == 1))
    killed = await rt.kill(acc.session_id, principal=ALICE)
    assert (killed.status, killed.changed) == ("killed", True)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    order = types(events)
    assert order[-3:] == ["turn.failed", "session.waiting", "session.failed"]
    assert order.index("session.killed") < order.index("turn.failed")
    assert events[-1].data == {"error": "session killed", "reason": "killed"}
    assert not (await rt.kill(acc.session_id, principal=ALICE)).changed
    assert len(await rt.store.read(acc.session_id)) == len(events)
    with pytest.raises(Conflict) as no_resume:
        await rt.resume(acc.session_id, principal=ALICE)
    assert no_resume.value.code == "session_killed"
    with pytest.raises(Conflict) as no_more:
        await rt.follow_up(acc.session_id, acc.continuation_token, "again", principal=ALICE)
    assert no_more.value.code == "session_killed"


async def test_a_killed_task_session_fails_once_with_reason_killed(env: Env) -> None:
    model = ScriptedModel([Step.delay(60.0)])
    rt = env.runtime(model)
    acc = await rt.start_session("a task", principal=ALICE, mode="task")
    await until(lambda: _true(len(model.requests) == 1))
    await rt.kill(acc.session_id, principal=ALICE)
    events = await rt.store.read(acc.session_id)
    ends = [e for e in events if e.type == "session.failed"]
    assert [e.data for e in ends] == [{"error": "session killed", "reason": "killed"}]
    assert events[-1].type == "session.failed"


async def test_killing_a_parked_turn_ends_it(env: Env) -> None:
    model = ScriptedModel([Step.tool_calls(call("deploy", {"env": "prod"}, id="d1"))])
    rt, sid, _ = await idle_session(env, model)
    await rt.kill(sid, principal=ALICE)
    events = await rt.store.read(sid)
    assert await rt.session_status(sid) == SessionStatus.FAILED
    assert types(events)[-1] == "session.failed"
    assert await rt.approvals(sid, principal=ALICE) == []


# ---- across invocations --------------------------------------------------------------


class Turns:
    """A dispatcher that keeps the turns handed to it, for the test to run."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, str]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.queue.append((session_id, turn_id))


@pytest.fixture(params=["memory", "dynamodb"])
def shared_store(request: pytest.FixtureRequest) -> Callable[[], Store]:
    if request.param == "memory":
        store = MemoryStore()
        return lambda: store
    factory = request.getfixturevalue("dynamodb_store_factory")
    first = factory()
    return lambda: factory(settings=first.settings) if first else first


async def test_a_turn_continued_in_a_later_invocation_sees_the_pause_in_the_store(
    tmp_path: Path, shared_store: Callable[[], Store]
) -> None:
    bundle = AgentBundle.discover(write_project(tmp_path / "proj", FILES))
    left = [900.0]

    def first_step(_request: ModelRequest) -> Step:
        left[0] = 60.0  # after this step no other fits: the turn continues elsewhere
        return Step.tool_calls(call("add", {"a": 1, "b": 2}))

    model = ScriptedModel([Step.respond(first_step), Step.text("three")])
    turns = Turns()
    # The API process and the turn process: one store's data, nothing else shared.
    api = AgentRuntime(bundle, shared_store(), dispatcher=turns, state_root=tmp_path / "a")
    worker = AgentRuntime(
        bundle,
        shared_store(),
        dispatcher=turns,
        model_resolver=lambda _id: model,
        state_root=tmp_path / "w",
    )
    acc = await api.start_session("add 1 and 2", principal=ALICE)
    deadline = Deadline(lambda: left[0], margin=120.0)
    await worker.run_turn(*turns.queue.pop(0), deadline)
    assert turns.queue == [(acc.session_id, acc.turn_id)]  # it dispatched itself again

    await api.pause(acc.session_id, principal=ALICE)
    left[0] = 900.0
    await worker.run_turn(*turns.queue.pop(0), deadline)
    assert len(model.requests) == 1  # no model call after the pause
    assert turns.queue == []
    events = await api.store.read(acc.session_id)
    failed = [e for e in events if e.type == "turn.failed"]
    assert [e.data["error"] for e in failed] == ["session paused"]
    assert await api.session_status(acc.session_id) == SessionStatus.IDLE


# ---- the kill switch -----------------------------------------------------------------


async def test_the_switch_refuses_new_work_and_stops_running_turns(
    env: Env, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [Step.text("hi"), Step.tool_calls(call("nap", {"seconds": 60})), Step.text("later")]
    )
    rt = env.runtime(model)
    switch = rt.ports.switch = FileSwitch(tmp_path / "switch", cache=0.0)
    first = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    napping = await rt.start_session("nap", principal=ALICE)
    await until(lambda: _running_nap(rt, napping.session_id))

    await switch.set(True, by="ops")
    await settle(rt)  # the nap is interrupted, gets its grace, and the turn ends
    events = await rt.store.read(napping.session_id)
    assert [e.data["error"] for e in events if e.type == "turn.failed"] == ["agent paused"]

    with pytest.raises(AgentPaused) as refused:
        await rt.start_session("another", principal=ALICE)
    assert (refused.value.status, refused.value.code) == (503, "agent_paused")
    assert refused.value.headers == {"retry-after": "30"}
    with pytest.raises(AgentPaused):
        await rt.follow_up(first.session_id, first.continuation_token, "hi", principal=ALICE)

    await switch.set(False, by="ops")
    again = await rt.follow_up(first.session_id, first.continuation_token, "hi", principal=ALICE)
    await settle(rt)
    assert again.session_id == first.session_id
    assert types(await rt.store.read(first.session_id)).count("turn.completed") == 2


async def test_the_switch_is_a_file_an_operator_can_create(tmp_path: Path) -> None:
    switch = FileSwitch(tmp_path, cache=0.0)
    assert not (await switch.read()).on
    (tmp_path / "paused").touch()
    assert (await switch.read()).on
    (tmp_path / "paused").unlink()
    assert not (await switch.read()).on
    state = await switch.set(True, by="ops")
    assert (state.on, state.by) == (True, "ops")


async def _true(value: bool) -> bool:
    return value


async def _running_nap(rt: AgentRuntime, session_id: str) -> bool:
    events = await rt.store.read(session_id)
    return any(e.type == "actions.requested" for e in events)
