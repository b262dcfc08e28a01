"""The per-principal daily limit, folded from the caller's sessions.

`define_agent(budget={"principal_daily_usd": 5})` (or `principal_daily_tokens`) caps what
one caller's turns may spend per UTC day. Before a caller's message is accepted (the HTTP
API, MCP `ask`, a custom channel route the caller was admitted to), the caller's sessions
touched today are folded (turn ends recorded since midnight UTC) and, once the limit is
reached, the message is refused with `429` and `Retry-After` (seconds to the next midnight
UTC). A channel's own principal, schedules and reminders are not counted
against it: they are the agent's own traffic, not a caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from agentkit.costs import Budget
from agentkit.engine.folds.forked import copied_through
from agentkit.engine.turn.budget import Spend
from agentkit.errors import TooManyRequests
from agentkit.events import EventType, Usage, iso_utc
from agentkit.store.base import Store

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


async def spent_today(store: Store, principal: str, midnight: str) -> Spend:
    """What `principal`'s turns that ended since `midnight` (ISO, UTC) spent."""
    spent = Spend()
    cursor: str | None = None
    while True:
        page = await store.list_sessions(principal, limit=100, cursor=cursor)
        for record in page.items:
            if record.updated_at < midnight and record.created_at < midnight:
                continue
            events = await store.read(record.id)
            copied = copied_through(events)  # a fork's copy was spent in its original
            for ev in events:
                if (
                    ev.at < midnight
                    or ev.index <= copied
                    or ev.type
                    not in (
                        EventType.TURN_COMPLETED,
                        EventType.TURN_FAILED,
                    )
                ):
                    continue
                raw = ev.data.get("usage")
                usage = Usage.model_validate(raw) if isinstance(raw, dict) else Usage()
                cost = ev.data.get("costUsd")
                spent = spent.plus(usage, float(cost) if isinstance(cost, int | float) else None)
        cursor = page.cursor
        if cursor is None:
            return spent


async def check_daily(store: Store, budget: Budget, principal: str, clock: Clock = _now) -> None:
    """Raise `TooManyRequests` when `principal` has used up today's limit."""
    if budget.principal_daily_tokens is None and budget.principal_daily_usd is None:
        return
    now = clock().astimezone(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    spent = await spent_today(store, principal, iso_utc(midnight))
    over = []
    if budget.principal_daily_tokens is not None and spent.tokens >= budget.principal_daily_tokens:
        over.append(f"{spent.tokens} of {budget.principal_daily_tokens} tokens")
    if (
        budget.principal_daily_usd is not None
        and spent.usd is not None
        and spent.usd >= budget.principal_daily_usd
    ):
        over.append(f"${spent.usd:.4f} of ${budget.principal_daily_usd:.4f}")
    if over:
        retry = max(1, int((midnight + timedelta(days=1) - now).total_seconds()) + 1)
        raise TooManyRequests(
            "daily limit reached: your turns today used " + " and ".join(over),
            retry_after=retry,
        )


__all__ = ["check_daily", "spent_today"]
