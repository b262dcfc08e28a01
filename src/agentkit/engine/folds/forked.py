"""Which events of a fork are the copy of its original's (`engine.forking`).

A fork starts with `session.forked {atIndex}` and then holds a copy of the original's
events `0..atIndex`, each one index later. What those record (turns, their spend, their
A/B samples) happened, and was paid for, in the original: folds that count across sessions
skip them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentkit.events import Event, EventType

SHIFT = 1  # every copied event sits this many places later in the fork


def copied_through(events: Sequence[Event]) -> int:
    """The index of the last event a fork copied from its original; -1 in a session that
    is not a fork (`events` must start at index 0)."""
    if not events or events[0].index != 0 or events[0].type != EventType.SESSION_FORKED:
        return -1
    return copied_through_of(events[0])


def copied_through_of(forked: Event) -> int:
    """`copied_through` from the fork's `session.forked` event itself."""
    at = forked.data.get("atIndex")
    return at + SHIFT if isinstance(at, int) and not isinstance(at, bool) else -1


__all__ = ["SHIFT", "copied_through", "copied_through_of"]
