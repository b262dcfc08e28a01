"""Continuing a turn in a new invocation, in the engine: a step whose calls are deferred
while another call of it waits for approval, recovery of a continued turn whose dispatch
was lost, and a local runtime (no deadline) that never continues.

The deadline is injected: `Clock.left` is the time the "invocation" has, moved by the test.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.turn.deadline import Deadline, marker_key
from agentkit.events import (
    ActionApprovalRequested,
    ActionCall,
    ActionsRequested,
    Event,
    MessageReceived,
    StepCompleted,
    StepStarted,
    TurnStarted,
    draft,
    iso_utc,
)
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import SessionRecord, hash_token
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, FILES, check_vocabulary, settle, types, write_project

SLOW_TOOL = """
    import os

    from pydantic import BaseModel
    from agentkit import define_tool

    class SlowInput(BaseModel):
        name: str

    @define_tool(description="Takes up to five minutes.", timeout=300)
    def slow(input: SlowInput, ctx) -> dict:
        with open(os.environ["AGENTKIT_TEST_SLOW_LOG"], "a", encoding="utf-8") as f:
            f.write(input.name + "\\n")
        return {"done": input.name}
"""


class Turns:
    """A dispatcher that keeps the turns handed to it, to run them as the test says."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, str]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.queue.append((session_id, turn_id))


class Clock:
    def __init__(self) -> None:
        self.left = 0.0

    def deadline(self) -> Deadline:
        return Deadline(lambda: self.left, margin=120.0)

    def spend(self, seconds: float, step: Step) -> Step:
        def respond(_request: ModelRequest) -> Step:
            self.left -= seconds
            return step

        return Step(responder=respond)


def runtime(tmp_path: Path, model: ScriptedModel, turns: Turns | None) -> AgentRuntime:
    project = write_project(tmp_path / "proj", {**FILES, "agent/tools/slow.py": SLOW_TOOL})
    bundle = AgentBundle.discover(project)
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    return AgentRuntime(
        bundle,
        MemoryStore(),
        dispatcher=turns,
        model_resolver=lambda _id: model,
        state_root=tmp_path / "state",
    )


def comparable(events: list[Event]) -> list[tuple[str, int, dict[str, Any]]]:
    # Two sessions compared: `agent.bound`'s URLs name each its own session.
    def same(e: Event) -> dict[str, Any]:
        data = {k: v for k, v in e.data.items() if k != "durationMs"}
        return cast(dict[str, Any], json.loads(json.dumps(data).replace(e.session_id, "<id>")))

    return [(e.type, e.index, same(e)) for e in events]


def mixed_step(clock: Clock) -> list[Step]:
    calls = Step.tool_calls(
        call("slow", {"name": "report"}, id="call_slow"),
        call("deploy", {"env": "prod"}, id="call_deploy"),
    )
    return [clock.spend(100, calls)]


async def test_deferred_calls_then_the_same_steps_approval(
    tmp_path: Path, monkeypatch: Any
) -> None:
    log = tmp_path / "slow.log"
    monkeypatch.setenv("AGENTKIT_TEST_SLOW_LOG", str(log))
    clock = Clock()
    turns = Turns()
    rt = runtime(tmp_path, ScriptedModel(mixed_step(clock)), turns)
    acc = await rt.start_session("Report, then deploy.", principal=ALICE)
    assert turns.queue == [(acc.session_id, acc.turn_id)]

    clock.left = 350.0  # 250 s left once the step is done: the 300 s tool must wait
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert not log.exists()
    assert turns.queue == [(acc.session_id, acc.turn_id)]  # it dispatched itself again
    assert await rt.store.get_claim(marker_key(acc.session_id, acc.turn_id)) is not None
    assert await rt.store.get_lease(acc.session_id) is None
    middle = await rt.store.read(acc.session_id)
    assert types(middle)[-1] == "actions.requested"

    clock.left = 900.0
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert log.read_text().splitlines() == ["report"]
    assert turns.queue == []  # parked on the approval, nothing continues
    assert await rt.store.get_claim(marker_key(acc.session_id, acc.turn_id)) is None
    continued = await rt.store.read(acc.session_id)
    check_vocabulary(continued)
    assert types(continued)[-3:] == ["action.result", "action.approval_requested", "step.completed"]

    # the same step in one go, with no deadline
    other = runtime(tmp_path / "again", ScriptedModel(mixed_step(Clock())), Turns())
    acc2 = await other.start_session("Report, then deploy.", principal=ALICE)
    await other.run_turn(acc2.session_id, acc2.turn_id)
    whole = await other.store.read(acc2.session_id)
    assert comparable(continued) == comparable(whole)
    assert log.read_text().splitlines() == ["report", "report"]


async def test_recovery_dispatches_a_continued_turn_and_fails_one_without_a_marker(
    tmp_path: Path,
) -> None:
    clock = Clock()
    turns = Turns()
    steps = [clock.spend(100, Step.tool_calls(call("add", {"a": 1, "b": 2}, id="c1")))] * 2
    rt = runtime(tmp_path, ScriptedModel(steps), turns)
    acc = await rt.start_session("Add.", principal=ALICE)
    clock.left = 200.0  # one step fits, the second would not
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert turns.queue == [(acc.session_id, acc.turn_id)]
    turns.queue.clear()  # the re-dispatch was lost

    await rt.recover()
    assert turns.queue == [(acc.session_id, acc.turn_id)]  # picked up, not ended
    assert "turn.failed" not in types(await rt.store.read(acc.session_id))

    # the same events without the marker are a process that died: the turn is lost
    await rt.store.release_claim(marker_key(acc.session_id, acc.turn_id))
    turns.queue.clear()
    await rt.recover()
    assert turns.queue == []
    events = await rt.store.read(acc.session_id)
    assert types(events)[-2:] == ["turn.failed", "session.waiting"]
    assert events[-2].data["error"].startswith("turn lost")


async def test_a_local_runtime_has_no_deadline_and_never_continues(tmp_path: Path) -> None:
    clock = Clock()  # left at 0 s: any deadline would stop the turn at once
    steps = [
        *(
            clock.spend(1000, Step.tool_calls(call("add", {"a": n, "b": 1}, id=f"c{n}")))
            for n in range(3)
        ),
        Step.text("Done."),
    ]
    rt = runtime(tmp_path, ScriptedModel(steps), None)  # `agentkit serve`'s composition
    acc = await rt.start_session("Add three times.", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert types(events).count("step.started") == 4
    assert types(events)[-2:] == ["turn.completed", "session.waiting"]
    assert await rt.store.get_claim(marker_key(acc.session_id, acc.turn_id)) is None


async def test_time_parked_on_an_approval_does_not_count_toward_the_limit(
    tmp_path: Path,
) -> None:
    rt = runtime(tmp_path, ScriptedModel([Step.text("Deployed.")]), None)
    record = SessionRecord(
        id="ses_parkedparkedparked01", principal="alice", token_hash=hash_token("http:t")
    )
    await rt.store.create_session(record)
    hours_ago = iso_utc(datetime.now(UTC) - timedelta(hours=5))  # the default limit is 1 h
    deploy = ActionCall(call_id="c1", tool_name="deploy", arguments={"env": "prod"})
    payloads = [
        MessageReceived(message="Deploy."),
        TurnStarted(model="scripted"),
        StepStarted(step=1),
        ActionsRequested(actions=[deploy]),
        ActionApprovalRequested(call_id="c1", tool_name="deploy", arguments={"env": "prod"}),
        StepCompleted(step=1, duration_ms=5),
    ]
    await rt.store.append(record.id, [draft(p, turn_id="turn_p", at=hours_ago) for p in payloads])
    await rt.resolve_approval(record.id, "c1", "approve", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(record.id)
    check_vocabulary(events)
    assert types(events)[-2:] == ["turn.completed", "session.waiting"]

    # the clock starts again at the decision: five hours after it, the limit applies
    rt.clock = lambda: time.time() + 5 * 3600
    late = runtime(tmp_path / "late", ScriptedModel([Step.text("Too late.")]), None)
    late.clock = rt.clock
    await late.store.create_session(record)
    await late.store.append(record.id, [draft(p, turn_id="turn_p", at=hours_ago) for p in payloads])
    await late.resolve_approval(record.id, "c1", "approve", principal=ALICE)
    await settle(late)
    events = await late.store.read(record.id)
    assert types(events)[-2:] == ["turn.failed", "session.waiting"]
    assert "max_turn_seconds (3600 s)" in events[-2].data["error"]


async def test_a_stop_between_invocations_ends_the_turn_before_anything_starts(
    tmp_path: Path,
) -> None:
    clock = Clock()
    turns = Turns()
    model = ScriptedModel(
        [clock.spend(100, Step.tool_calls(call("add", {"a": 1, "b": 2}, id="c1")))] * 3
    )
    rt = runtime(tmp_path, model, turns)
    acc = await rt.start_session("Add.", principal=ALICE)
    clock.left = 200.0  # one step fits
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert len(model.requests) == 1
    await rt.store.set_interrupt(acc.session_id, True)  # a stop sent to another process
    clock.left = 900.0
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert len(model.requests) == 1  # no step was started
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert types(events)[-2:] == ["turn.failed", "session.waiting"]
    assert events[-2].data["error"] == "turn interrupted"
    assert turns.queue == []


async def test_a_worker_that_lost_its_lease_does_not_continue(tmp_path: Path) -> None:
    from agentkit.store.base import Lease

    clock = Clock()
    turns = Turns()
    rt = runtime(tmp_path, ScriptedModel([]), turns)
    store = rt.store
    assert isinstance(store, MemoryStore)
    session: dict[str, str] = {}

    def steal(_request: ModelRequest) -> Step:
        # Another worker takes the session over while this one streams its step.
        clock.left -= 100
        thief = Lease(holder="thief", expires_at=time.time() + 600)
        store._sessions[session["id"]].lease = thief  # no async hook in a model step
        return Step.tool_calls(call("add", {"a": 1, "b": 2}, id="c1"))

    model = ScriptedModel([Step(responder=steal)])
    rt.model_resolver = lambda _id: model
    acc = await rt.start_session("Add.", principal=ALICE)
    session["id"] = acc.session_id
    clock.left = 200.0  # the boundary after the step is where it would continue
    await rt.run_turn(*turns.queue.pop(0), clock.deadline())
    assert turns.queue == []  # the zombie asks for no new invocation
    assert await rt.store.get_claim(marker_key(acc.session_id, acc.turn_id)) is None
    lease = await rt.store.get_lease(acc.session_id)
    assert lease is not None and lease.holder == "thief"
