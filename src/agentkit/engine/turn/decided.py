"""Asking the budget's "continue?", and resuming a turn whose approvals were decided: that
question answered, each decided call run (approved, arguments unchanged) or answered
denied."""

from __future__ import annotations

import secrets

from agentkit.engine.folds.conversation import BUDGET_TOOL
from agentkit.engine.folds.pending_approvals import DENIED, arguments_digest
from agentkit.engine.tools.calls import Outcome
from agentkit.engine.turn.budget import (
    BUDGET_CALL_PREFIX,
    BUDGET_TIMEOUT_PRINCIPAL,
    is_budget_question,
    tokens,
)
from agentkit.engine.turn.deps import (
    Planned,
    RequestedCall,
    RunningTurn,
    tool_result,
)
from agentkit.engine.turn.loop_guard import LoopDetected, is_loop_question
from agentkit.errors import RunError
from agentkit.events import ActionApprovalRequested, ActionCall, ActionStarted

BUDGET_DENIED = "budget exceeded: the request to continue was denied"
BUDGET_UNANSWERED = "budget exceeded: the request to continue was not answered in time"


async def resume_decided(runner: RunningTurn) -> None:
    """Record the results of calls whose approvals were decided, then carry on."""
    plans: list[Planned] = []
    for p in [q for q in runner.state.pending.values() if is_loop_question(q.tool_name, q.call_id)]:
        runner.state.pending.pop(p.call_id)
        approved = p.decision == "approve"
        outcome = Outcome(False, result="continue") if approved else Outcome(True, error=DENIED)
        call = ActionCall(call_id=p.call_id, tool_name=p.tool_name, arguments={})
        await runner.emit(tool_result(call, outcome))
        if not approved:
            raise LoopDetected({k: v for k, v in p.arguments.items() if k != "message"})
    budget = [
        p for p in runner.state.pending.values() if is_budget_question(p.tool_name, p.call_id)
    ]
    for p in budget:
        runner.state.pending.pop(p.call_id)
        approved = p.decision == "approve"
        why = BUDGET_UNANSWERED if p.decided_by == BUDGET_TIMEOUT_PRINCIPAL else BUDGET_DENIED
        outcome = Outcome(False, result="continue") if approved else Outcome(True, error=why)
        call = ActionCall(call_id=p.call_id, tool_name=BUDGET_TOOL, arguments={})
        await runner.emit(tool_result(call, outcome))
        if not approved:
            raise RunError(why)
        # The approval itself is on record: `session_spend` already counted it.
    for p in runner.state.pending.values():
        call = ActionCall(call_id=p.call_id, tool_name=p.tool_name, arguments=p.arguments)
        if p.decision != "approve":
            plans.append(Planned(call, error=DENIED))
            continue
        digest_ok = p.decided_digest in (None, arguments_digest(p.arguments))
        if p.approval_arguments != p.arguments or not digest_ok:
            plans.append(Planned(call, error="approval does not match the requested call"))
            continue
        planned = runner.plan(RequestedCall(p.call_id, p.tool_name, p.arguments))
        planned.needs_approval = False
        plans.append(planned)
    runner.state.pending.clear()
    runner.open.update((p.call.call_id, p.call) for p in plans)
    # No interrupt check here: an approval answered 200 means its call runs. A stop or
    # follow-up that came meanwhile ends the turn once the calls are under way (they
    # get `stop_grace` like any running call), never before they start.
    # Durable before the first decided call runs: after a crash from here on, a call
    # without a result may have run, so it is answered in doubt and never run again.
    started = [
        ActionStarted(call_id=p.call.call_id, tool_name=p.call.tool_name)
        for p in plans
        if p.error is None and p.entry is not None
    ]
    if started:
        await runner.emit(*started)
    await runner.run_calls(plans, decided=True)


async def park_on_budget(runner: RunningTurn, reason: str) -> None:
    """Park the turn on a "continue?" approval instead of spending past a limit."""
    call_id = BUDGET_CALL_PREFIX + secrets.token_hex(6)
    request = ActionApprovalRequested(
        call_id=call_id,
        tool_name=BUDGET_TOOL,
        arguments={"reason": reason, "spentTokens": tokens(runner.usage), "costUsd": runner.cost},
    )
    await runner.emit(request)
