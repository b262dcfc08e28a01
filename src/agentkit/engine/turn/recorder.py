"""The one place the runtime records events: store append, then fanout.

`Recorder.emit` appends a batch of payloads durably and only then publishes the recorded
events. Adjacent events with nothing observable between them (say `message.completed`
and `actions.requested`) go in one batch, so a turn costs a handful of store writes, and
`actions.requested` is always durable before any of its tools runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from agentkit.engine import event_metrics
from agentkit.engine.fanout import Fanout, safe_publish
from agentkit.events import (
    Event,
    EventDraft,
    MessageAppended,
    Payload,
    ReasoningAppended,
    now_iso,
)
from agentkit.sessions import SessionRecord
from agentkit.store.base import Store

FLUSH_SECONDS = 0.05
FLUSH_CHARS = 256


class Recorder:
    """Records events of one session (optionally one turn) and publishes them."""

    def __init__(
        self,
        store: Store,
        session: SessionRecord,
        fanout: Fanout | None,
        turn_id: str | None = None,
        lease_holder: str | None = None,
        *,
        counted: bool = True,
        agent: str | None = None,
    ) -> None:
        self.store = store
        # When set, every append is fenced by this lease (`LeaseLost` once it is gone).
        self.lease_holder = lease_holder
        self.session = session
        self.fanout = fanout
        self.turn_id = turn_id
        self.log: list[Event] | None = None  # when set, every recorded event lands here too
        # False for a fork's copy of history: what it records happened once already.
        self.counted = counted
        self.agent = agent  # the agent's name, when the runtime knows it (for spans)

    async def emit(self, *payloads: Payload) -> list[Event]:
        """Append payloads as one contiguous batch; returns the recorded events."""
        at = now_iso()
        drafts = [EventDraft(p.type.value, p.wire(), self.turn_id, at) for p in payloads]
        return await self.append(drafts)

    async def append(self, drafts: Sequence[EventDraft]) -> list[Event]:
        if not drafts:
            return []
        if self.lease_holder is not None:
            events = await self.store.append(
                self.session.id, drafts, lease_holder=self.lease_holder
            )
        else:
            events = await self.store.append(self.session.id, drafts)
        if self.log is not None:
            self.log.extend(events)
        if self.counted:
            event_metrics.record(self.session, events, self.log)
        safe_publish(self.fanout, self.session, events)
        return events


class DeltaBuffer:
    """Coalesces streamed text so a long reply costs tens of events, not thousands.

    Text is held until `FLUSH_CHARS` characters or `FLUSH_SECONDS` have accumulated; the
    caller records what `take` returns. `full` keeps the whole text of the block.
    """

    def __init__(
        self,
        kind: type[MessageAppended] | type[ReasoningAppended],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self.clock = clock
        self.full = ""
        self._pending: list[str] = []
        self._size = 0
        self._since = 0.0

    def add(self, text: str) -> Payload | None:
        """Buffer `text`; returns a payload to record when it is time to flush."""
        if not text:
            return None
        if not self._pending:
            self._since = self.clock()
        self.full += text
        self._pending.append(text)
        self._size += len(text)
        if self._size >= FLUSH_CHARS or self.clock() - self._since >= FLUSH_SECONDS:
            return self.take()
        return None

    def take(self) -> Payload | None:
        """Whatever is buffered, as one payload (None when nothing is)."""
        if not self._pending:
            return None
        text = "".join(self._pending)
        self._pending, self._size = [], 0
        return self.kind(text=text)

    def reset(self) -> None:
        self.full, self._pending, self._size = "", [], 0
