"""An approval racing a follow-up on a parked turn: either the approved call runs, or the
approval answers `409 turn_interrupted`. Never `200` for a call that then ends unrun.

The race is repeated: the losing interleavings are a few in twenty, so one try proves
nothing."""

from __future__ import annotations

import asyncio

from agentkit.errors import Conflict
from agentkit.events import Event
from agentkit.models.base import ModelRequest, ToolResultMessage, UserMessage
from agentkit.models.scripted import ScriptedModel, Step, call

from .conftest import ALICE, Env, check_vocabulary, settle
from .side_effects import deploy_calls

TRIALS = 25


def deploy_on_ask(request: ModelRequest) -> Step:
    """Asked to ship, call `deploy` (which needs approval); otherwise answer."""
    last = request.messages[-1]
    if isinstance(last, UserMessage) and last.text.startswith("ship "):
        env = last.text.removeprefix("ship ")
        return Step.tool_calls(call("deploy", {"env": env}, id="d1"))
    if isinstance(last, ToolResultMessage):
        return Step.text("done: " + last.content)
    return Step.text("ok")


def call_started(events: list[Event], call_id: str) -> bool:
    return any(e.type == "action.started" and e.data["callId"] == call_id for e in events)


async def test_an_approval_racing_a_follow_up_runs_the_call_or_says_it_lost(env: Env) -> None:
    rt = env.runtime(ScriptedModel([Step.respond(deploy_on_ask)] * (4 * TRIALS)))
    outcomes: list[tuple[str, str]] = []
    for i in range(TRIALS):
        target = f"race-{env.kind}-{i}"
        acc = await rt.start_session(f"ship {target}", principal=ALICE)
        await settle(rt)
        assert [p.call_id for p in await rt.approvals(acc.session_id, principal=ALICE)] == ["d1"]

        approval, follow_up = await asyncio.gather(
            rt.resolve_approval(acc.session_id, "d1", "approve", principal=ALICE),
            rt.follow_up(acc.session_id, acc.continuation_token, "never mind", principal=ALICE),
            return_exceptions=True,
        )
        await settle(rt)
        events = await rt.store.read(acc.session_id)
        check_vocabulary(events)
        ran = target in deploy_calls(rt)
        if isinstance(approval, BaseException):
            assert isinstance(approval, Conflict), approval
            assert approval.code in ("turn_interrupted", "session_busy"), approval.code
            assert not ran and not call_started(events, "d1")
        else:
            # Answered 200: the approved call was recorded as started, and it ran.
            assert call_started(events, "d1"), [e.type for e in events]
            assert ran, [(e.type, e.data) for e in events if e.type.startswith("action")]
        if isinstance(follow_up, BaseException):
            assert isinstance(follow_up, Conflict) and follow_up.code == "session_busy"
        assert not (isinstance(approval, BaseException) and isinstance(follow_up, BaseException))
        outcomes.append(
            (
                "approved" if approval is None else type(approval).__name__,
                "followed" if not isinstance(follow_up, BaseException) else "refused",
            )
        )
    assert len(outcomes) == TRIALS
