"""Forking a session at an event: a copy of its history that goes on by itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.folds.conversation import fold_conversation
from agentkit.engine.folds.daily_use import spent_today
from agentkit.engine.forking import cut_turn_error
from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import BadRequest, Forbidden
from agentkit.events import Event
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import SessionStatus, fold_status
from agentkit.store.base import Store
from agentkit.store.files import FileStore

from .conftest import ALICE, BOB, Env, settle
from .forking_rig import STORES, policy_model, recorded_session, results_shape
from .side_effects import deploy_calls


@dataclass
class Rig:
    kind: str
    rt: AgentRuntime
    store: Store


@pytest.fixture(params=STORES)
async def rig(request: pytest.FixtureRequest, project: Path, tmp_path: Path) -> AsyncIterator[Rig]:
    kind = request.param
    store: Store = (
        FileStore(tmp_path / "state")
        if kind == "files"
        else request.getfixturevalue("dynamodb_store_factory")()
    )
    env = Env("files", AgentBundle.discover(project), tmp_path / "state")
    rt = env.runtime(policy_model(), store=store)
    yield Rig(kind, rt, store)
    d = rt.dispatcher
    if isinstance(d, LocalDispatcher):
        await d.close()
    await store.close()


async def test_a_fork_starts_with_session_forked_then_the_copied_prefix(
    rig: Rig,
) -> None:
    rt, store = rig.rt, rig.store
    sid = await recorded_session(rt)
    original = await store.read(sid)
    forked = await rt.fork(sid, 5, principal=ALICE)
    events = await store.read(forked.session_id)
    assert events[0].type == "session.forked"
    assert events[0].data["fromSessionId"] == sid
    assert events[0].data["atIndex"] == 5
    assert events[0].data["manifestDigest"].startswith("sha256:")
    copied = events[1:7]
    assert [e.type for e in copied] == [e.type for e in original[:6]]
    for mine, theirs in zip(copied, original, strict=False):
        if mine.type != "agent.bound":
            assert mine.data == theirs.data
        assert mine.at == theirs.at
        # Turn ids are the fork's own: a turn is never shared by two sessions.
        assert (mine.turn_id is None) == (theirs.turn_id is None)
        assert mine.turn_id is None or mine.turn_id != theirs.turn_id
    bound = next(e for e in events if e.type == "agent.bound")
    assert bound.data["urls"]["session"] == f"/v1/session/{forked.session_id}"
    assert await store.read(sid) == original  # the original is only read


async def test_a_fork_is_the_forkers_and_takes_follow_ups_with_its_own_token(
    rig: Rig,
) -> None:
    rt, store = rig.rt, rig.store
    sid = await recorded_session(rt)
    length = len(await store.read(sid))
    forked = await rt.fork(sid, length - 1, principal=ALICE)
    record = await rt.get_session(forked.session_id, principal=ALICE)
    assert record.channel_id == "http" and record.principal == "alice"
    accepted = await rt.follow_up(
        forked.session_id, forked.continuation_token, "and then?", principal=ALICE
    )
    await settle(rt)
    events = await store.read(forked.session_id)
    assert events[-2].type == "turn.completed" and events[-2].turn_id == accepted.turn_id
    assert events[-2].data["result"].startswith("continued after")
    assert len(await store.read(sid)) == length  # nothing reached the original


async def test_only_the_owner_may_fork(rig: Rig) -> None:
    rt = rig.rt
    sid = await recorded_session(rt, approve=False)
    with pytest.raises(Forbidden):
        await rt.fork(sid, 0, principal=BOB)


@pytest.mark.parametrize("at_index", [-1, 10_000, "3", 2.0, True, None])
async def test_an_index_outside_the_stream_is_a_bad_request(env: Env, at_index: object) -> None:
    rt = env.runtime(policy_model())
    sid = await recorded_session(rt, approve=False)
    with pytest.raises(BadRequest):
        await rt.fork(sid, at_index, principal=ALICE)  # type: ignore[arg-type]
    assert len((await rt.list_sessions(principal=ALICE)).items) == 1  # no fork was made


async def test_a_call_pending_at_the_cut_is_pending_in_the_fork_and_can_be_approved(
    rig: Rig,
) -> None:
    rt, store = rig.rt, rig.store
    sid = await recorded_session(rt, approve=False)
    original = await store.read(sid)
    requested = next(e.index for e in original if e.type == "action.approval_requested")
    before = len(deploy_calls(rt))
    forked = await rt.fork(sid, requested, principal=ALICE)
    fork_events = await store.read(forked.session_id)
    assert fold_status(fork_events) == SessionStatus.AWAITING_APPROVAL
    assert [p.call_id for p in await rt.approvals(forked.session_id, principal=ALICE)] == ["d1"]
    await rt.resolve_approval(forked.session_id, "d1", "approve", principal=ALICE)
    await settle(rt)
    fork_events = await store.read(forked.session_id)
    assert fork_events[-2].type == "turn.completed"
    assert fork_events[-2].data["result"].startswith("shipped:")
    assert len(deploy_calls(rt)) == before + 1
    # The original still waits on its own decision.
    assert [p.call_id for p in await rt.approvals(sid, principal=ALICE)] == ["d1"]
    assert await store.read(sid) == original


async def test_a_cut_inside_a_turn_ends_that_turn_in_the_fork(
    rig: Rig,
) -> None:
    rt, store = rig.rt, rig.store
    sid = await recorded_session(rt)
    original = await store.read(sid)
    inside = next(e.index for e in original if e.type == "actions.requested")
    forked = await rt.fork(sid, inside, principal=ALICE)
    events = await store.read(forked.session_id)
    assert [e.type for e in events[inside + 2 :]] == ["turn.failed", "session.waiting"]
    assert events[inside + 2].data["error"] == cut_turn_error(inside)
    assert fold_status(events) == SessionStatus.IDLE
    assert await rt.sweep(idle_for=0) == 0  # nothing left for the sweeper to pick up


async def test_a_fork_at_every_index_of_a_three_tool_session_continues(rig: Rig) -> None:
    rt, store = rig.rt, rig.store
    sid = await recorded_session(rt)
    original = await store.read(sid)
    # moto answers one request at a time and slows down as its tables grow: on DynamoDB
    # the session is forked at one index of each kind of cut (the start, inside a turn,
    # between turns, parked on an approval, the end), on files at every index.
    cuts = range(len(original)) if rig.kind == "files" else kinds_of_cut(original)
    for k in cuts:
        forked = await rt.fork(sid, k, principal=ALICE)
        events = await store.read(forked.session_id)
        prefix = results_shape(fold_conversation(original[: k + 1]))
        assert results_shape(fold_conversation(events)) == prefix, k
        accepted = await rt.follow_up(
            forked.session_id, forked.continuation_token, f"go on from {k}", principal=ALICE
        )
        await settle(rt)
        events = await store.read(forked.session_id)
        ends = [e for e in events if e.turn_id == accepted.turn_id and e.type.startswith("turn.")]
        assert ends[-1].type == "turn.completed", (k, ends[-1].data)
        assert ends[-1].data["result"].startswith("continued after"), k
        prefix = results_shape(fold_conversation(original[: k + 1]))
        assert results_shape(fold_conversation(events))[: len(prefix)] == prefix, k
    assert await store.read(sid) == original


def kinds_of_cut(events: list[Event]) -> list[int]:
    def first(kind: str) -> int:
        return next(e.index for e in events if e.type == kind)

    return sorted(
        {
            0,
            first("actions.requested"),
            first("turn.completed"),
            first("action.approval_requested"),
            len(events) - 1,
        }
    )


async def test_a_forks_copied_turns_do_not_count_against_the_daily_limit(env: Env) -> None:
    rt = env.runtime(policy_model())
    sid = await recorded_session(rt)
    midnight = "1970-01-01T00:00:00.000Z"
    before = await spent_today(rt.store, "alice", midnight)
    assert before.tokens > 0
    forked = await rt.fork(sid, len(await rt.store.read(sid)) - 1, principal=ALICE)
    assert await spent_today(rt.store, "alice", midnight) == before
    await rt.follow_up(forked.session_id, forked.continuation_token, "more", principal=ALICE)
    await settle(rt)
    assert (await spent_today(rt.store, "alice", midnight)).tokens > before.tokens
