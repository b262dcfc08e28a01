"""The `Fanout` port: who hears about events after they are durably recorded.

The runtime records every event through one place; once the store's `append` has returned,
it hands the recorded events to `Fanout.publish`. Hooks (local, in-process) and live
subscribers sit behind it. `publish` must return quickly and must never raise into the
turn: an observer's failure is logged, never fatal. Slow work belongs in a task the
implementation schedules itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentkit.events import Event
from agentkit.sessions import SessionRecord

log = logging.getLogger("agentkit.engine.fanout")


@runtime_checkable
class Fanout(Protocol):
    """Observers of recorded events (hooks, live subscribers)."""

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        """Hand over events that are already durable. Never blocks, never raises."""
        ...


class NullFanout:
    """A fanout that drops everything (the default when the host wires none)."""

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        return None


class MultiFanout:
    """Publish to several fanouts in order; one failing never stops the others."""

    def __init__(self, fanouts: Sequence[Fanout]) -> None:
        self._fanouts = list(fanouts)

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        for fanout in self._fanouts:
            safe_publish(fanout, session, events)


def safe_publish(fanout: Fanout | None, session: SessionRecord, events: list[Event]) -> None:
    """Call `fanout.publish`, logging (never raising) whatever it throws."""
    if fanout is None or not events:
        return
    try:
        fanout.publish(session, events)
    except Exception:  # observers are never fatal to a turn
        log.exception("fanout publish failed for session %s", session.id)
