"""Unanswered budget approvals: a turn parked on "budget exceeded: continue?" does not wait
for ever. Once the request has waited longer than the agent's
`budget={"approval_timeout_s": ...}` (a day by default), the sweeper records a deny on the
agent's behalf, and the turn ends as `turn.failed` saying that nobody answered. The
decision is an ordinary `action.approval_resolved` event (its principal names the timeout),
so a replay, the playground and every host see the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agentkit.costs import DEFAULT_BUDGET_ANSWER_SECONDS, parse_budget
from agentkit.engine.approvals import RunDecided, record_decision
from agentkit.engine.folds.pending_approvals import pending_approvals
from agentkit.engine.ports import SessionPorts
from agentkit.engine.turn.budget import BUDGET_TIMEOUT_PRINCIPAL, is_budget_question
from agentkit.errors import Conflict, NotFound
from agentkit.sessions import Principal, SessionRecord

TIMEOUT = Principal(BUDGET_TIMEOUT_PRINCIPAL)


def answer_seconds(options: dict[str, object]) -> float | None:
    """How long a budget approval of this agent may wait; None when it has no budget."""
    budget = parse_budget(options.get("budget"))
    if budget.empty:
        return None
    return budget.approval_timeout_s or DEFAULT_BUDGET_ANSWER_SECONDS


async def expire_budget_approvals(
    ports: SessionPorts,
    record: SessionRecord,
    options: dict[str, object],
    clock: Callable[[], float],
    run_decided: RunDecided,
) -> int:
    """Deny the session's budget approvals that waited too long (the agent's `options`
    say how long); how many were denied."""
    wait = answer_seconds(options)
    if wait is None:
        return 0
    now = clock()
    denied = 0
    for p in pending_approvals(await ports.store.read(record.id)):
        if not is_budget_question(p.tool_name, p.call_id) or p.turn_id is None:
            continue
        if now - datetime.fromisoformat(p.requested_at).timestamp() < wait:
            continue
        try:
            await record_decision(ports, record, p.call_id, "deny", TIMEOUT, run_decided)
        except (Conflict, NotFound):
            continue  # answered (or busy) meanwhile: the person's answer stands
        denied += 1
    return denied


class BudgetExpiry:
    """The sweeper's `expire`: `expire_budget_approvals` for one session at a time, with
    the agent's options read for each (a reload applies at once)."""

    def __init__(
        self,
        ports: SessionPorts,
        options: Callable[[], dict[str, object]],
        clock: Callable[[], float],
        run_decided: RunDecided,
    ) -> None:
        self.ports = ports
        self.options = options
        self.clock = clock
        self.run_decided = run_decided

    async def __call__(self, record: SessionRecord) -> int:
        return await expire_budget_approvals(
            self.ports, record, self.options(), self.clock, self.run_decided
        )


__all__ = ["TIMEOUT", "BudgetExpiry", "answer_seconds", "expire_budget_approvals"]
