"""A lease survives a failed renewal: a duplicate delivery of a live turn does nothing,
instead of declaring the turn lost (two terminal events for one turn)."""

from __future__ import annotations

import asyncio

from agentkit.errors import StoreError
from agentkit.models.scripted import ScriptedModel, Step, call

from .conftest import ALICE, Env, settle


async def test_one_failed_renewal_does_not_lose_the_turn(env: Env) -> None:
    ttl = 1.5
    steps = [Step.tool_calls(call("nap", {"seconds": 4 * ttl}, id="n1")), Step.text("done")]
    rt = env.runtime(ScriptedModel(steps), lease_ttl=ttl)
    store = rt.store
    real = store.renew_lease
    failures = [StoreError("throttled")]

    async def renew_failing_once(session_id: str, holder: str, ttl: float) -> bool:
        if failures:
            raise failures.pop()
        return await real(session_id, holder, ttl)

    store.renew_lease = renew_failing_once  # type: ignore[method-assign]
    try:
        acc = await rt.start_session("nap", principal=ALICE)
        # Past the point where the lease would have run out had renewal stopped.
        await asyncio.sleep(2 * ttl)
        assert not failures, "the renewal never ran"
        await rt.run_turn(acc.session_id, acc.turn_id)  # a duplicate delivery
        await settle(rt)
    finally:
        store.renew_lease = real  # type: ignore[method-assign]
    events = await rt.store.read(acc.session_id)
    kinds = [e.type for e in events if e.turn_id == acc.turn_id]
    assert kinds.count("turn.completed") == 1
    assert "turn.failed" not in kinds
    assert [e.data["callId"] for e in events if e.type == "action.result"] == ["n1"]
