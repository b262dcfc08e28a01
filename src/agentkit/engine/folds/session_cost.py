"""A session's total cost, folded from its turn ends and kept per process incrementally."""

from __future__ import annotations

from agentkit.costs import add_costs
from agentkit.events import EventType
from agentkit.store.base import Store

KEPT = 4096


async def session_cost(
    store: Store, session_id: str, cache: dict[str, tuple[int, float | None]]
) -> float | None:
    """Sum of `costUsd` over the session's turn ends; None if any turn's price was unknown.

    `cache` maps a session to how far its stream was folded and the sum so far, so a
    listing polled every few seconds reads only what was appended since."""
    start, cost = cache.get(session_id, (0, 0.0))
    events = await store.read(session_id, start)
    for ev in events:
        if ev.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            raw = ev.data.get("costUsd")
            cost = add_costs(cost, float(raw) if isinstance(raw, int | float) else None)
    if events:
        start = events[-1].index + 1
    if len(cache) >= KEPT:
        cache.pop(next(iter(cache)))
    cache[session_id] = (start, cost)
    return cost if start else None


__all__ = ["session_cost"]
