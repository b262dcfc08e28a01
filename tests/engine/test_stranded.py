"""No session stuck in "running" with a stranded token: a failure after the token rotation
gives the old token back, and the sweeper picks up turns nobody works on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.recovery import fail_lost
from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import StoreError
from agentkit.events import Event, EventDraft, TurnStarted
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.sessions import SessionStatus, fold_status

from .conftest import ALICE, Env, settle


class FlakyDispatcher(LocalDispatcher):
    """Fails (like a Lambda Invoke error) or silently drops the next dispatch when armed."""

    fail_next = False
    drop_next = False

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("invoke failed: throttled")
        if self.drop_next:
            self.drop_next = False
            return
        await super().dispatch(session_id, turn_id)


def flaky(env: Env, steps: list[Step]) -> tuple[FlakyDispatcher, AgentRuntime]:
    rt = env.runtime(ScriptedModel(steps))
    dispatcher = FlakyDispatcher(rt)
    rt.dispatcher = dispatcher
    return dispatcher, rt


async def test_a_failed_dispatch_gives_the_token_back(env: Env) -> None:
    dispatcher, rt = flaky(env, [Step.text("one"), Step.text("two")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    dispatcher.fail_next = True
    with pytest.raises(RuntimeError):
        await rt.follow_up(acc.session_id, acc.continuation_token, "again", principal=ALICE)
    events = await rt.store.read(acc.session_id)
    assert fold_status(events) == SessionStatus.IDLE  # the undispatched turn was ended
    # The old token still works: the session is not stuck behind a token nobody knows.
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "again", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert "turn.completed" in [e.type for e in events if e.turn_id == nxt.turn_id]


async def test_a_new_session_whose_turn_could_not_be_dispatched_is_ended(env: Env) -> None:
    # Its caller got an error and no token: nothing may run later on its behalf.
    dispatcher, rt = flaky(env, [Step.text("never")])
    dispatcher.fail_next = True
    with pytest.raises(RuntimeError):
        await rt.start_session("hi", principal=ALICE)
    (record,) = (await rt.store.list_sessions(None, limit=5)).items
    events = await rt.store.read(record.id)
    assert fold_status(events) == SessionStatus.IDLE
    (failed,) = [e for e in events if e.type == "turn.failed"]
    assert "could not start the turn" in str(failed.data)
    assert await rt.sweep(idle_for=0) == 0


async def test_a_failed_append_gives_the_token_back(env: Env) -> None:
    rt = env.runtime([Step.text("one"), Step.text("two")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    store = rt.store
    real = store.append
    failures = [StoreError("disk full")]

    async def append_failing_once(session_id: str, drafts: Sequence[EventDraft]) -> list[Event]:
        if failures:
            raise failures.pop()
        return await real(session_id, drafts)

    store.append = append_failing_once  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreError):
            await rt.follow_up(acc.session_id, acc.continuation_token, "x", principal=ALICE)
        nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "y", principal=ALICE)
    finally:
        store.append = real  # type: ignore[method-assign]
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert "turn.completed" in [e.type for e in events if e.turn_id == nxt.turn_id]


async def test_the_sweeper_dispatches_a_turn_whose_dispatch_was_lost(env: Env) -> None:
    dispatcher, rt = flaky(env, [Step.text("one"), Step.text("swept")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    dispatcher.drop_next = True
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "lost", principal=ALICE)
    events = await rt.store.read(acc.session_id)
    assert fold_status(events) == SessionStatus.RUNNING
    assert await rt.sweep() == 0  # not quiet for a lease TTL yet
    assert await rt.sweep(idle_for=0) == 1
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    kinds = [e.type for e in events if e.turn_id == nxt.turn_id]
    assert kinds.count("turn.completed") == 1
    assert fold_status(events) == SessionStatus.IDLE


async def test_the_sweeper_fails_a_started_turn_with_no_worker(env: Env) -> None:
    rt = env.runtime([Step.text("one"), Step.text("two")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    record = await rt.store.get_session(acc.session_id)
    assert record is not None
    # A turn that started in a worker which then vanished (no lease, no terminal event).
    dispatcher = rt.dispatcher
    rt.dispatcher = FlakyDispatcher(rt)
    rt.dispatcher.drop_next = True
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "go", principal=ALICE)
    rt.dispatcher = dispatcher
    await rt.recorder(record, nxt.turn_id).emit(TurnStarted(model="scripted"))
    assert await rt.sweep(idle_for=0) == 1
    events = await rt.store.read(acc.session_id)
    assert [e.type for e in events if e.turn_id == nxt.turn_id].count("turn.failed") == 1
    assert fold_status(events) == SessionStatus.IDLE


async def test_two_deliveries_of_one_failure_record_one_turn_failed(env: Env) -> None:
    rt = env.runtime([Step.text("one")])
    rt.dispatcher = FlakyDispatcher(rt)
    rt.dispatcher.drop_next = True
    acc = await rt.start_session("hi", principal=ALICE)
    record = await rt.store.get_session(acc.session_id)
    assert record is not None
    await rt.recorder(record, acc.turn_id).emit(TurnStarted(model="scripted"))
    got = await asyncio.gather(
        fail_lost(rt.ports, record, acc.turn_id, "lost"),
        fail_lost(rt.ports, record, acc.turn_id, "lost"),
    )
    again = await fail_lost(rt.ports, record, acc.turn_id, "lost")
    events = await rt.store.read(acc.session_id)
    assert [e.type for e in events].count("turn.failed") == 1
    assert sorted(got) == [False, True] and again is False


async def test_serve_sweeps_on_a_timer(project: Path, tmp_path: Path) -> None:
    """`agentkit serve`'s host runs the sweeper by itself: a turn whose dispatch was lost
    completes with nobody calling `sweep`."""
    from agentkit.hosts.local import LocalHost, LocalHostOptions
    from agentkit.project.bundle import AgentBundle

    model = ScriptedModel([Step.text("swept by the timer")])
    host = LocalHost(
        AgentBundle.discover(project),
        LocalHostOptions(state_root=tmp_path / "serve", schedules=False),
        runtime_options={"model_resolver": lambda _id: model, "lease_ttl": 0.3},
    )
    await host.start()
    rt = host.runtime
    dispatcher = FlakyDispatcher(rt)
    rt.dispatcher = dispatcher
    try:
        dispatcher.drop_next = True
        acc = await rt.start_session("hi", principal=ALICE)
        deadline = time.monotonic() + 60
        while True:
            events = await rt.store.read(acc.session_id)
            if fold_status(events) == SessionStatus.IDLE:
                break
            assert time.monotonic() < deadline, "the sweeper never picked the turn up"
            await asyncio.sleep(0.05)
        await dispatcher.drain()
        kinds = [e.type for e in await rt.store.read(acc.session_id) if e.turn_id == acc.turn_id]
        assert kinds.count("turn.completed") == 1
    finally:
        await dispatcher.close()
        await host.aclose()
