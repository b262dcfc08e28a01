"""Fanout, lease renewal and channel-key follow-ups."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentkit.errors import Conflict, Forbidden, NotFound
from agentkit.events import Event
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call, delay, text
from agentkit.sessions import Principal, SessionRecord

from .conftest import ALICE, BOB, Env, StoreClock, settle


class Collect:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        self.events.extend(events)


class Broken:
    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        raise RuntimeError("observer bug")


async def test_fanout_hears_every_recorded_event_once_in_order(env: Env) -> None:
    fanout = Collect()
    rt = env.runtime(
        [Step.tool_calls(call("add", {"a": 1, "b": 2})), Step.text("3")], fanout=fanout
    )
    acc = await rt.start_session("sum", principal=ALICE)
    await settle(rt)
    assert fanout.events == await rt.store.read(acc.session_id)


async def test_a_failing_fanout_never_fails_the_turn(env: Env) -> None:
    rt = env.runtime([Step.text("fine")], fanout=Broken())
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert events[-2].type == "turn.completed"


async def test_a_running_turn_keeps_renewing_its_lease(env: Env) -> None:
    gate = asyncio.Event()

    def slow(request: ModelRequest) -> list:
        gate.set()
        return [*text("a"), delay(60)]

    # The lease expires by the store's clock, which the test moves a little (a sixth of the
    # TTL) after each expiry it has seen, so a stalled core can delay a renewal but never
    # let the lease lapse; the renewer's own cadence (a third of the TTL) stays real.
    ttl = 0.6
    clock = StoreClock()
    rt = env.runtime([Step.respond(slow)], store=env.new_store_on(clock), lease_ttl=ttl)
    acc = await rt.start_session("x", principal=ALICE)
    await gate.wait()
    first = await rt.store.get_lease(acc.session_id)
    assert first is not None
    # Watch the lease until it has been pushed forward three times. No bound on how long
    # each renewal takes beyond a generous deadline: on a loaded machine it is later, never
    # wrong; a turn that stopped renewing never gets there.
    seen = [first.expires_at]
    clock.now += ttl / 6
    deadline = time.monotonic() + 60
    while len(seen) < 4:
        assert time.monotonic() < deadline, f"the lease was renewed only {len(seen) - 1} times"
        lease = await rt.store.get_lease(acc.session_id)
        assert lease is not None and lease.holder == first.holder
        if lease.expires_at > seen[-1]:
            assert lease.expires_at == clock.now + ttl  # renewed from the store's "now"
            seen.append(lease.expires_at)
            clock.now += ttl / 6
        await asyncio.sleep(0.02)  # polling the store, not timing the turn
    assert await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)
    assert await rt.store.get_lease(acc.session_id) is None


async def test_follow_up_by_channel_key(env: Env) -> None:
    model = ScriptedModel([Step.text("first"), Step.text("reminded")])
    rt = env.runtime(model)
    acc = await rt.start_session(
        "watch the PR", principal=ALICE, channel_id="github", continuation_key="pr:o/r#1"
    )
    await settle(rt)
    nxt = await rt.follow_up_by_key(
        "github", "pr:o/r#1", "re-check CI", principal=ALICE, source="reminder"
    )
    await settle(rt)
    assert nxt.session_id == acc.session_id and nxt.continuation_token == "pr:o/r#1"
    events = await rt.store.read(acc.session_id)
    assert events[-2].data["result"] == "reminded"
    received = [e for e in events if e.type == "message.received"]
    assert received[-1].data["source"] == "reminder"
    with pytest.raises(NotFound):
        await rt.follow_up_by_key("github", "pr:o/r#2", "x", principal=ALICE)
    with pytest.raises(Forbidden):
        await rt.follow_up_by_key("github", "pr:o/r#1", "x", principal=BOB)


async def test_task_sessions_refuse_key_follow_ups(env: Env) -> None:
    rt = env.runtime([Step.text("done")])
    await rt.start_session(
        "run", principal=ALICE, mode="task", channel_id="cron", continuation_key="k"
    )
    await settle(rt)
    with pytest.raises(Conflict) as err:
        await rt.follow_up_by_key("cron", "k", "more", principal=ALICE)
    assert err.value.code == "not_followable"


async def test_listing_is_per_principal(env: Env) -> None:
    rt = env.runtime([Step.text("a"), Step.text("b")])
    mine = await rt.start_session("a", principal=ALICE)
    await rt.start_session("b", principal=BOB)
    await settle(rt)
    page = await rt.list_sessions(principal=ALICE)
    assert [r.id for r in page.items] == [mine.session_id]
    everyone = await rt.list_sessions(principal=Principal("dev", admin=True))
    assert len(everyone.items) == 2
    with pytest.raises(Forbidden):
        await rt.read_events(mine.session_id, principal=BOB)


async def test_deliver_sends_into_a_session_without_its_token(env: Env) -> None:
    rt = env.runtime([Step.text("first"), Step.text("from a reminder")])
    acc = await rt.start_session("one", principal=ALICE)
    await settle(rt)
    delivered = await rt.deliver(acc.session_id, "time is up")
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    received = [e for e in events if e.type == "message.received"][-1]
    assert received.turn_id == delivered.turn_id
    assert received.data["source"] == "reminder" and received.data["principal"] == "alice"
    assert events[-2].data["result"] == "from a reminder"
    # the caller's HTTP token still works: deliver does not rotate it
    await rt.follow_up(acc.session_id, acc.continuation_token, "thanks", principal=ALICE)
    await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)
