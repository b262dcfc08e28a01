"""The events the DynamoDB store has read, kept per session so a read queries new items only.

An event item is never changed once written: appends only add items after the last one,
and deleting a session first appends its `deleted` fence after the last event (see
`dynamodb.py`). So the events read so far stay true, whichever process wrote them, and a
read asks DynamoDB only for the items after them: new events, or the fence when the
session was deleted here or elsewhere. Without this, every read of a whole session, several
a turn, queried and decoded the session from its first event, so a turn cost grew with the
length of the conversation.

Handing out the same event objects on every read also lets the folds carried per session
(`events.carried`) carry on, as they do over the other stores' views.

Bounded: least recently used sessions go first, by count and by the bytes of their items.
One long session may fill the bound alone (a long conversation is the case this is for);
one larger than the bound is not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from agentkit.events import Event

DEFAULT_SESSIONS = 256
DEFAULT_BYTES = 64 << 20


class _Seen:
    __slots__ = ("events", "size")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.size = 0


class SeenEvents:
    """Each session's events from index 0 up to the last one read, contiguous."""

    def __init__(self, sessions: int = DEFAULT_SESSIONS, max_bytes: int = DEFAULT_BYTES) -> None:
        self._sessions = max(1, sessions)
        self._max_bytes = max_bytes
        self._size = 0
        self._kept: OrderedDict[str, _Seen] = OrderedDict()
        # Stores run on one loop, but a Lambda handler or a test may drive one from threads.
        self._guard = threading.Lock()

    def count(self, session_id: str) -> int:
        """How many of the session's events are kept (0 when none)."""
        with self._guard:
            found = self._kept.get(session_id)
            return 0 if found is None else len(found.events)

    def extend(
        self,
        session_id: str,
        start: int,
        events: Sequence[Event],
        sizes: Sequence[int],
        window: slice,
    ) -> list[Event] | None:
        """Keep `events` (read from index `start`, with their item sizes) after those kept,
        and return the `window` of all kept; None when they do not follow on (another read
        got there first, or `start` is past the end) or the session is too large to keep."""
        with self._guard:
            found = self._kept.get(session_id)
            if found is None:
                if start != 0:
                    return None
                found = self._kept[session_id] = _Seen()
            elif len(found.events) != start:
                return None
            self._kept.move_to_end(session_id)
            added = sum(sizes)
            found.events.extend(events)
            found.size += added
            self._size += added
            if found.size > self._max_bytes:
                self._forget(session_id)
                return None
            kept = found.events[window]
            while len(self._kept) > self._sessions or self._size > self._max_bytes:
                self._forget(next(iter(self._kept)))
            return kept

    def forget(self, session_id: str) -> None:
        """Drop what is kept of the session (it was deleted)."""
        with self._guard:
            self._forget(session_id)

    def _forget(self, session_id: str) -> None:
        found = self._kept.pop(session_id, None)
        if found is not None:
            self._size -= found.size
