"""A lease survives a failed renewal: a duplicate delivery of a live turn does nothing,
instead of declaring the turn lost (two terminal events for one turn)."""

from __future__ import annotations

import asyncio
import time

from agentkit.errors import StoreError
from agentkit.models.scripted import ScriptedModel, Step, call

from .conftest import ALICE, Env, settle


async def test_one_failed_renewal_does_not_lose_the_turn(env: Env) -> None:
    # A TTL long enough that a loaded machine (one core, under coverage) never lets the
    # lease lapse between renewals; the test waits on the renewals themselves, not a clock.
    ttl = 6.0
    steps = [Step.tool_calls(call("nap", {"seconds": 3 * ttl}, id="n1")), Step.text("done")]
    rt = env.runtime(ScriptedModel(steps), lease_ttl=ttl)
    store = rt.store
    real = store.renew_lease
    failures = [StoreError("throttled")]
    renewed_after_failure = asyncio.Event()

    async def renew_failing_once(session_id: str, holder: str, ttl: float) -> bool:
        if failures:
            raise failures.pop()
        kept = await real(session_id, holder, ttl)
        renewed_after_failure.set()  # the retry after the failure went through
        return kept

    store.renew_lease = renew_failing_once  # type: ignore[method-assign]
    try:
        acc = await rt.start_session("nap", principal=ALICE)
        await asyncio.wait_for(renewed_after_failure.wait(), 60)
        assert not failures, "the renewal never ran"
        await rt.run_turn(acc.session_id, acc.turn_id)  # a duplicate delivery, turn live
        await settle(rt)
    finally:
        store.renew_lease = real  # type: ignore[method-assign]
    events = await rt.store.read(acc.session_id)
    kinds = [e.type for e in events if e.turn_id == acc.turn_id]
    assert kinds.count("turn.completed") == 1
    assert "turn.failed" not in kinds
    assert [e.data["callId"] for e in events if e.type == "action.result"] == ["n1"]


async def test_a_worker_that_lost_its_lease_appends_nothing_more(env: Env) -> None:
    """A zombie (its lease ran out and another holder took the session) writes nothing
    after the takeover: not its call's result, not a terminal event."""
    ttl = 3.0
    steps = [Step.tool_calls(call("nap", {"seconds": 2.0}, id="n1")), Step.text("done")]
    rt = env.runtime(ScriptedModel(steps), lease_ttl=ttl)
    acc = await rt.start_session("nap", principal=ALICE)
    deadline = time.monotonic() + 60
    while "actions.requested" not in [e.type for e in await rt.store.read(acc.session_id)]:
        assert time.monotonic() < deadline, "the call never started"
        await asyncio.sleep(0.01)
    # The worker's lease is taken over, as after it ran out under a paused worker.
    lease = await rt.store.get_lease(acc.session_id)
    assert lease is not None
    await rt.store.release_lease(acc.session_id, lease.holder)
    assert await rt.store.acquire_lease(acc.session_id, "thief", 600)
    taken_at = len(await rt.store.read(acc.session_id))
    await asyncio.wait_for(settle(rt), 60)
    events = await rt.store.read(acc.session_id)
    assert events[taken_at:] == [], [e.type for e in events[taken_at:]]
    lease = await rt.store.get_lease(acc.session_id)
    assert lease is not None and lease.holder == "thief"
