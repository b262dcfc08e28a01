"""Turn and session budgets: one check every model call of a turn passes through.

`define_agent(budget={"turn_tokens": ..., "turn_usd": ..., "session_tokens": ...,
"session_usd": ...})` sets limits (any subset). Before each model step of a turn the loop
asks `BudgetCheck.verdict`: if what is spent plus what the last step spent (the estimate
of the next step) would pass a limit, the turn parks on an approval (tool name `budget`,
"budget exceeded: continue?"). Approving grants one more budget's worth (the limit counts
once more per approval); denying ends the turn as `turn.failed`. Subagents run inside a
tool call and cannot park, so their model is wrapped in `GuardedModel`, which asks the same
check before each of their steps and stops the subagent with an error when it says no: the
parent's next step then parks. At 80% of a limit, the remaining budget is told to the model
in the system prompt so it can wrap up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentkit.costs import Budget, add_costs, parse_budget
from agentkit.engine.folds.conversation import BUDGET_TOOL
from agentkit.errors import ModelError
from agentkit.events import Event, EventType, Usage
from agentkit.events.carried import Carried
from agentkit.models.base import Finish, Model, ModelChunk, ModelRequest

BUDGET_CALL_PREFIX = "budget_"
# The principal recorded when a budget approval is denied because nobody answered it.
BUDGET_TIMEOUT_PRINCIPAL = "agentkit:budget-timeout"
WARN_AT = 0.8


def is_budget_question(tool_name: str, call_id: str) -> bool:
    """Whether a parked call is the engine's "budget exceeded: continue?" (a user tool may
    also be named `budget`; only the engine's call ids carry `BUDGET_CALL_PREFIX`)."""
    return tool_name == BUDGET_TOOL and call_id.startswith(BUDGET_CALL_PREFIX)


def tokens(usage: Usage) -> int:
    """Every token a call was billed for."""
    return (
        usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens
    )


@dataclass(slots=True)
class Spend:
    tokens: int = 0
    usd: float | None = 0.0

    def plus(self, usage: Usage, cost: float | None) -> Spend:
        return Spend(self.tokens + tokens(usage), add_costs(self.usd, cost))


@dataclass(frozen=True, slots=True)
class Verdict:
    exceeded: str | None = None  # why the next step would pass a limit
    note: str | None = None  # remaining budget to tell the model (past WARN_AT)


@dataclass(frozen=True, slots=True)
class SessionSpend:
    before: Spend  # what earlier turns spent
    last_step: Spend  # the latest step recorded: the estimate of the next one
    session_grants: int  # budget approvals granted in the session
    turn_grants: int  # ... in this turn


def _cost(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, int | float) else None


def _usage(raw: Any) -> Usage:
    return Usage.model_validate(raw) if isinstance(raw, dict) else Usage()


@dataclass(slots=True)
class _Ledger:
    """What a stretch of a session's events says about spending, whichever turn asks."""

    ended: list[tuple[str | None, Usage, float | None]] = field(default_factory=list)
    """(turn id, usage, cost) of every `turn.completed`/`turn.failed`, in order."""
    last_step: dict[str, Any] | None = None  # the data of the latest `step.completed`
    grants: list[str | None] = field(default_factory=list)  # turn ids of budget approvals

    def copy(self) -> _Ledger:
        return _Ledger(list(self.ended), self.last_step, list(self.grants))

    def add(self, ev: Event) -> None:
        t, d = ev.type, ev.data
        if t == EventType.STEP_COMPLETED:
            self.last_step = d  # only the latest counts: parsed when asked
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            self.ended.append((ev.turn_id, _usage(d.get("usage")), _cost(d.get("costUsd"))))
        elif (
            t == EventType.ACTION_APPROVAL_RESOLVED
            and str(d.get("callId", "")).startswith(BUDGET_CALL_PREFIX)
            and d.get("decision") == "approve"
        ):
            self.grants.append(ev.turn_id)

    def spend(self, turn_id: str) -> SessionSpend:
        spent = Spend()
        for ended_turn, usage, cost in self.ended:
            if ended_turn != turn_id:
                spent = spent.plus(usage, cost)
        last_step = self.last_step
        last = (
            Spend()
            if last_step is None
            else Spend().plus(_usage(last_step.get("usage")), _cost(last_step.get("costUsd")))
        )
        turn_grants = sum(1 for granted in self.grants if granted == turn_id)
        return SessionSpend(spent, last, len(self.grants), turn_grants)


_LEDGERS: Carried[_Ledger] = Carried(_Ledger)


def session_spend(events: Iterable[Event], turn_id: str) -> SessionSpend:
    """What the session's events say about spending so far (for the turn `turn_id`).

    A turn asks this when it starts, over every event of the session: the sums of the
    events it saw before are kept per session, and only the events since are added (see
    `events.carried`)."""
    return _LEDGERS.over(events).spend(turn_id)


def limits_spend(budget: Budget) -> bool:
    """Whether `budget` limits a turn or a session (what `BudgetCheck` checks; the daily
    limits per principal are checked when a message arrives)."""
    return (
        budget.turn_tokens is not None
        or budget.turn_usd is not None
        or budget.session_tokens is not None
        or budget.session_usd is not None
    )


class BudgetCheck:
    """The single budget chokepoint of one turn."""

    def __init__(self, budget: Budget, spend: SessionSpend) -> None:
        self.budget = budget
        self.before = spend.before
        self.session_grants = spend.session_grants
        self.turn_grants = spend.turn_grants

    def _limits(self, turn: Spend) -> list[tuple[str, float, float, str]]:
        """(what, spent, allowed, unit) per configured limit."""
        b, out = self.budget, []
        session = Spend(self.before.tokens + turn.tokens, add_costs(self.before.usd, turn.usd))
        t_mult, s_mult = 1 + self.turn_grants, 1 + self.session_grants
        if b.turn_tokens is not None:
            out.append(("turn", float(turn.tokens), float(b.turn_tokens * t_mult), "tokens"))
        if b.turn_usd is not None and turn.usd is not None:
            out.append(("turn", turn.usd, b.turn_usd * t_mult, "usd"))
        if b.session_tokens is not None:
            out.append(
                ("session", float(session.tokens), float(b.session_tokens * s_mult), "tokens")
            )
        if b.session_usd is not None and session.usd is not None:
            out.append(("session", session.usd, b.session_usd * s_mult, "usd"))
        return out

    def verdict(self, turn: Spend, next_step: Spend) -> Verdict:
        """Whether the next step (estimated as `next_step`) may run, and what to tell the
        model about the budget left."""
        notes: list[str] = []
        for what, spent, allowed, unit in self._limits(turn):
            estimate = float(next_step.tokens) if unit == "tokens" else (next_step.usd or 0.0)
            if spent >= allowed or spent + estimate > allowed:
                return Verdict(
                    exceeded=f"budget exceeded: this {what} has used {_fmt(spent, unit)} of"
                    f" {_fmt(allowed, unit)}; continue?"
                )
            if spent >= WARN_AT * allowed:
                notes.append(
                    f"this {what} has used {_fmt(spent, unit)} of its {_fmt(allowed, unit)}"
                    f" budget; about {_fmt(allowed - spent, unit)} remain"
                )
        if not notes:
            return Verdict()
        note = "Budget: " + "; ".join(notes) + ". Wrap up and give your answer now."
        return Verdict(note=note)


def _fmt(value: float, unit: str) -> str:
    return f"${value:.4f}" if unit == "usd" else f"{int(value)} tokens"


class GuardedModel:
    """A model whose every step first asks the turn's budget check (for subagents)."""

    def __init__(self, model: Model, allowed: Callable[[Usage], str | None]) -> None:
        self.model = model
        self.allowed = allowed  # given what this model has spent so far; a reason to stop
        self._done = Usage()  # of finished steps

    @property
    def id(self) -> str:
        return self.model.id

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        reason = self.allowed(self._done)
        if reason is not None:
            raise ModelError(reason)
        by_message: dict[str, Usage] = {}  # one usage per message id, as `model_step` counts
        anonymous = Usage()
        try:
            async for chunk in self.model.stream(request):
                if isinstance(chunk, Finish):
                    if chunk.message_id is None:
                        anonymous = anonymous + chunk.usage
                    else:
                        by_message[chunk.message_id] = chunk.usage
                yield chunk
        finally:
            self._done = sum(by_message.values(), self._done + anonymous)

    @property
    def usage(self) -> Usage:
        """What this model's finished steps used."""
        return self._done


__all__ = [
    "BUDGET_CALL_PREFIX",
    "BUDGET_TIMEOUT_PRINCIPAL",
    "BUDGET_TOOL",
    "Budget",
    "BudgetCheck",
    "GuardedModel",
    "SessionSpend",
    "Spend",
    "Verdict",
    "is_budget_question",
    "limits_spend",
    "parse_budget",
    "session_spend",
    "tokens",
]
