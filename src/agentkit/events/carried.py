"""State folded over a session's events, kept per session and carried on with new events.

The engine folds the same growing stream again and again: every step of a turn folds the
conversation, every turn adds up what the session spent. A fold that goes event by event
can carry on from where it stopped, so its state after the last call is kept per session and
only the events recorded since are added. It is carried on only while the stream passed in
is the one it came from: the stream still holds the same event object at the same place
(as the stores' caches and a running turn hand out). Any other stream is folded afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, Self, TypeVar

from agentkit.events import Event


class Folding(Protocol):
    """A fold's state: it takes events one by one, and copies itself independently."""

    def add(self, event: Event) -> None: ...

    def copy(self) -> Self: ...


S = TypeVar("S", bound=Folding)


class Carried(Generic[S]):
    """Per-session states made by `make` and fed every event of the stream, kept for up to
    `keep` sessions (all dropped at once when full)."""

    def __init__(self, make: Callable[[], S], keep: int = 256) -> None:
        self._make = make
        self._keep = keep
        # session id -> (events folded, the last of them, the state after them)
        self._kept: dict[str, tuple[int, Event, S]] = {}

    def over(self, events: Iterable[Event]) -> S:
        """The state after every event of `events`. It may be the kept one: read it, do not
        change it (`copy` it first)."""
        if not isinstance(events, Sequence) or not events:
            return self._fresh(events)
        count = len(events)
        last = events[count - 1]
        session_id = last.session_id
        cached = self._kept.get(session_id)
        if cached is not None and cached[0] <= count and events[cached[0] - 1] is cached[1]:
            done, _, state = cached
            if done < count:
                state = state.copy()  # the kept state stays what it was for its stream
                for event in events[done:]:
                    state.add(event)
        else:
            state = self._fresh(events)
        if len(self._kept) >= self._keep and session_id not in self._kept:
            self._kept.clear()
        self._kept[session_id] = (count, last, state)
        return state

    def _fresh(self, events: Iterable[Event]) -> S:
        state = self._make()
        for event in events:
            state.add(event)
        return state


__all__ = ["Carried", "Folding"]
