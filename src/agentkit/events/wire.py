"""The wire format of events: the envelope as msgspec structs, NDJSON lines and timestamps.

The envelope is `{type, index, sessionId, turnId?, at, data}`. Producers build an
`EventDraft` from a typed payload (`draft(TurnCompleted(...), turn_id=...)`); the store
assigns the next `index` when it appends and returns `Event`s. A line never holds a raw
line separator (U+2028, U+2029, U+0085), so splitting a stream on line breaks is safe.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from agentkit.events.vocabulary import PAYLOADS, Payload

P = TypeVar("P", bound=Payload)


def iso_utc(moment: datetime) -> str:
    """`moment` in UTC as ISO-8601 with milliseconds and a `Z` (a naive time is UTC).

    The one timestamp form of events and stored records.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The text of the last whole second `now_iso` formatted: (epoch second, "YYYY-MM-DDTHH:MM:SS").
# Every event is stamped, so the date part is formatted once a second, not once an event.
# Kept for bench/bench_turn.py: without it the follow-up (file) row took about 0.08 ms a
# turn longer (paired, 2026-12).
_SECOND: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds and a `Z` (as `iso_utc` writes
    it; milliseconds are truncated, never rounded up)."""
    global _SECOND
    ms = time.time_ns() // 1_000_000
    second, text = _SECOND
    if ms // 1000 != second:
        second = ms // 1000
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _SECOND = (second, text)
    return f"{text}.{ms % 1000:03d}Z"


_ENCODER = msgspec.json.Encoder()
_RAW_BREAKS = (
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
    ("\u0085".encode(), b"\\u0085"),
)

# Characters JSON leaves raw inside strings but line splitters treat as line ends.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"})


def escape_line_breaks(json_text: str) -> str:
    """JSON text with U+2028, U+2029 and U+0085 escaped (they occur only inside strings)."""
    return json_text.translate(_LINE_BREAKS)


class EventDraft(msgspec.Struct, frozen=True, gc=False):
    """An event before the store has given it an index.

    A frozen msgspec struct, like `Event`: every recorded event is drafted first, and one is
    built in C several times faster than a frozen dataclass sets its fields."""

    type: str
    data: dict[str, Any]
    turn_id: str | None = None
    at: str = msgspec.field(default_factory=now_iso)


def draft(payload: Payload, *, turn_id: str | None = None, at: str | None = None) -> EventDraft:
    """Build a draft event from a typed payload."""
    return EventDraft(
        type=payload.type.value, data=payload.wire(), turn_id=turn_id, at=at or now_iso()
    )


class Event(
    msgspec.Struct,
    frozen=True,
    gc=False,
    rename={"session_id": "sessionId", "turn_id": "turnId"},
):
    """A recorded event. `data` is the wire payload; `payload()` parses it.

    A frozen msgspec struct rather than a dataclass: a store's replay decodes the JSON
    lines straight into these in C, several times faster than building them in Python
    (see `decode_events`). The envelope's types are checked as it decodes; the payload is
    parsed by pydantic only when someone asks (`payload()`, `as_()`): events the store
    reads back were validated when they were written. (`gc=False`: an event never refers
    back to itself, so the garbage collector need not track the thousands a replay makes.)
    """

    type: str
    index: int
    session_id: str
    at: str
    data: dict[str, Any]
    turn_id: str | None = None

    @property
    def known(self) -> bool:
        """False for event types this version does not know (kept, never dropped)."""
        return self.type in PAYLOADS

    def payload(self) -> Payload | None:
        """The typed payload, or None for an unknown event type."""
        cls = PAYLOADS.get(self.type)
        return cls.model_validate(self.data) if cls else None

    def as_(self, cls: builtins.type[P]) -> P:
        """The payload parsed as `cls`; raises if the type does not match."""
        if self.type != cls.type.value:
            raise TypeError(f"event {self.index} is {self.type}, not {cls.type.value}")
        return cls.model_validate(self.data)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "index": self.index,
            "sessionId": self.session_id,
        }
        if self.turn_id is not None:
            out["turnId"] = self.turn_id
        out["at"] = self.at
        out["data"] = self.data
        return out

    def to_json(self) -> str:
        """One NDJSON line (without the newline).

        U+2028, U+2029 and U+0085 are written as JSON escapes: they are line breaks to
        `str.splitlines` (and to readers built on it), so raw they could split the line.
        """
        return self.to_line()[:-1].decode("utf-8")

    def to_line(self) -> bytes:
        """One NDJSON line as UTF-8 bytes, newline included.

        Text may carry lone surrogates (a tool's undecodable file name, say), which UTF-8
        cannot encode; such an event is written with JSON escapes instead, losslessly.
        """
        wire = self.to_wire()
        try:
            line = _ENCODER.encode(wire)
        except (UnicodeEncodeError, TypeError, OverflowError, msgspec.EncodeError):
            # Lone surrogates, huge integers, NaN and such: the standard library's rules.
            text = json.dumps(wire, separators=(",", ":"), ensure_ascii=True)
            return text.encode("ascii") + b"\n"
        # Most lines are ASCII: one pass says so, where three searches cost more than the
        # encoding itself.
        if not line.isascii() and (
            b"\xe2\x80\xa8" in line or b"\xe2\x80\xa9" in line or b"\xc2\x85" in line
        ):
            # Only these code points encode to these bytes in UTF-8, so this is exact.
            for raw, escaped in _RAW_BREAKS:
                line = line.replace(raw, escaped)
        return line + b"\n"

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Event:
        return cls(
            type=str(raw["type"]),
            index=int(raw["index"]),
            session_id=str(raw["sessionId"]),
            turn_id=raw.get("turnId"),
            at=str(raw["at"]),
            data=dict(raw.get("data") or {}),
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Event:
        return cls.from_wire(json.loads(line))

    @classmethod
    def from_draft(cls, d: EventDraft, *, session_id: str, index: int) -> Event:
        return cls(
            type=d.type,
            index=index,
            session_id=session_id,
            at=d.at,
            data=d.data,
            turn_id=d.turn_id,
        )


def contiguous(events: Sequence[Event], start: int) -> list[Event]:
    """The run of `events` (in index order) that goes on from index `start` with no gap;
    events before `start` are skipped.

    A reader's position must never pass an event it has not seen: a store read can return
    part of a batch being written (a DynamoDB query is not isolated from a transaction), so
    readers stop at the first missing index and find the rest on their next read."""
    run: list[Event] = []
    expected = start
    for event in events:
        if event.index < expected:
            continue
        if event.index != expected:
            break
        run.append(event)
        expected += 1
    return run
