"""The stream bookkeeping shared by the sync and async clients (no I/O here).

A session's stream is gap-free and every event carries its index, so resuming is
arithmetic: after a response ends early (a dropped connection, a server restart, the end of
a deployed API's stream window) the client asks again from the last index it yielded plus
one. `Cursor` holds that index, drops what was already yielded and reports a gap;
`LineSplitter` cuts the body into NDJSON lines on "\\n" only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from agentkit.client._errors import StreamGap
from agentkit.events import Event, EventType

SETTLED = frozenset(
    {EventType.SESSION_WAITING, EventType.SESSION_COMPLETED, EventType.SESSION_FAILED}
)
FINAL = frozenset({EventType.SESSION_COMPLETED, EventType.SESSION_FAILED})  # nothing follows

GapHandler = Callable[[StreamGap], None]


class LineSplitter:
    """Text chunks in, complete lines out.

    `httpx`'s `iter_lines` also splits at U+2028, U+2029 and U+0085, which may sit raw
    inside a JSON string and are no line ends in NDJSON. A line still pending when a
    connection breaks is torn and is dropped (the resumed request sends it again).
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        self._pending += text
        *complete, self._pending = self._pending.split("\n")
        return complete

    def end(self) -> list[str]:
        """The last line of a body that ended cleanly without a final newline."""
        rest, self._pending = self._pending, ""
        return [rest] if rest.strip() else []


def parse_line(line: str) -> Event | None:
    """The event on one line, or None for a blank or unreadable line."""
    if not line.strip():
        return None
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("index"), int):
        return None
    try:
        return Event.from_wire(raw)
    except (KeyError, TypeError, ValueError):
        return None


def parse_body(text: str) -> list[Event]:
    """The events of a whole NDJSON body, in order (unreadable lines left out)."""
    splitter = LineSplitter()
    lines = splitter.feed(text) + splitter.end()
    return [e for e in map(parse_line, lines) if e is not None]


def fresh(lines: list[str], cursor: Cursor) -> Iterator[Event]:
    """The events on `lines` that `cursor` has not yielded yet, advancing it as each one
    is taken (a gap is raised in order, after the events before it)."""
    for line in lines:
        event = parse_line(line)
        if event is not None and cursor.accept(event):
            yield event


@dataclass
class Cursor:
    """Where a reader of one session's stream is: the next index it expects."""

    session_id: str
    next_index: int = 0
    on_gap: GapHandler | None = None
    gaps: list[StreamGap] = field(default_factory=list)

    def accept(self, event: Event) -> bool:
        """Whether to yield `event`: False for an index already yielded; a skipped index
        raises `StreamGap` (or goes to `on_gap`, after which the event is yielded)."""
        if event.index < self.next_index:
            return False
        if event.index > self.next_index:
            gap = StreamGap(self.session_id, self.next_index, event.index)
            if self.on_gap is None:
                raise gap
            self.gaps.append(gap)
            self.on_gap(gap)
        self.next_index = event.index + 1
        return True


@dataclass
class TurnWatch:
    """Decides when `Session.wait()` is done: the watched turn ended or parked.

    `turn_id` is the turn of the last accepted message (None: whichever turn comes next).
    A parked turn records its approval requests and then ends the step
    (`step.completed`) in one write; that step end is the moment it is parked.
    """

    turn_id: str | None
    events: list[Event] = field(default_factory=list)
    parked: bool = False

    def _ours(self, event: Event) -> bool:
        return self.turn_id is None or event.turn_id == self.turn_id

    def done(self, event: Event) -> bool:
        """Feed one event; True when the wait is over."""
        self.events.append(event)
        kind = event.type
        if kind in FINAL:
            return True
        if not self._ours(event):
            return False
        if kind in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            return True
        if kind == EventType.ACTION_APPROVAL_REQUESTED:
            self.parked = True
        elif kind == EventType.ACTION_APPROVAL_RESOLVED:
            self.parked = False
        elif kind == EventType.STEP_COMPLETED and self.parked:
            return True
        return False

    def reply(self) -> str:
        """The turn's reply text; `TurnError` if it failed or parked."""
        from agentkit.client._errors import TurnError

        last = self.events[-1] if self.events else None
        if last is None:
            raise TurnError("no events were read")
        if last.type == EventType.TURN_COMPLETED:
            return str(last.data.get("result", ""))
        if last.type == EventType.SESSION_COMPLETED:
            return str(last.data.get("result") or "")
        if last.type in (EventType.TURN_FAILED, EventType.SESSION_FAILED):
            raise TurnError(f"the turn failed: {last.data.get('error')}")
        raise TurnError("the turn is parked on a tool approval", parked=True)
