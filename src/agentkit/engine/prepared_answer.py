"""A follow-up's answer kept before its token rotates, so a crash in between strands no one.

With an `Idempotency-Key`, a follow-up's new token and turn id are chosen before anything
is written, and its answer (sealed, as a replay's is) is kept in the key's record as
`prepared` before the token rotates. A process killed after the rotation, before the
answer was kept as `done`, leaves that record; a retry with the same key and body, holding
the token from before the rotation, then finds it and asks the session what happened.
A new session is prepared the same way (its id, token and turn chosen and its answer kept
before the session is created), so a crash after it was created cannot make the retry
start a second one:

- the message of the prepared turn is recorded (or queued behind a busy turn, under
  `on_busy="queue"`): the follow-up was accepted. The kept
  answer (same session, turn and new token) is replayed and the record becomes `done`;
- it is not, and the record is older than `ABANDONED_AFTER`: the process died between
  the rotation and the message. The token is given back (a compare-and-set from the new
  hash to the old one, a no-op if it never rotated), a new session left with no events is
  deleted, and the retry runs afresh;
- otherwise the first attempt may still be running: `409 idempotency_key_in_use`.

The route says which answers are prepared (`answer_once(..., shape=...)`); the follow-up
or the new session takes the intent from the context it runs in (`take`), so no layer in
between changes shape.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.engine.service import Accepted
from agentkit.events import Event, EventType

PREPARED = "prepared"
# Between the answer kept and the message recorded there is one rotation: far less than
# this, unless the process died.
ABANDONED_AFTER = 30.0


@dataclass(frozen=True, slots=True)
class Intent:
    """What the write about to run will answer, and how to keep it first. `session_id` is
    the id a new session takes (a follow-up's session has its own)."""

    token: str
    turn_id: str
    keep: Callable[[Accepted, str | None], Awaitable[None]]  # (answer, hash before rotating)
    session_id: str = ""


_CURRENT: ContextVar[Intent | None] = ContextVar("agentkit_prepared_answer", default=None)


def take() -> Intent | None:
    """The intent of the request this code runs for (none without an Idempotency-Key),
    taken: the work it spawns from here on (a dispatched turn, whose task copies this
    context) sees none, so no other write picks it up."""
    intent = _CURRENT.get()
    if intent is not None:
        _CURRENT.set(None)
    return intent


async def run_with(intent: Intent, run: Callable[[], Awaitable[Any]]) -> Any:
    """Run `run` with `intent` as the current one (and only for `run`)."""
    reset = _CURRENT.set(intent)
    try:
        return await run()
    finally:
        _CURRENT.reset(reset)


def prepared_detail(
    fingerprint: str, sealed: str, accepted: Accepted, token_hash: str, old_hash: str | None
) -> str:
    return json.dumps(
        {
            "fingerprint": fingerprint,
            "sealed": sealed,
            "sessionId": accepted.session_id,
            "turnId": accepted.turn_id,
            "tokenHash": token_hash,
            "oldHash": old_hash,
            "at": time.time(),
        }
    )


@runtime_checkable
class SessionReader(Protocol):
    """The store operations the check needs."""

    async def read(
        self, session_id: str, start: int = 0, limit: int | None = None
    ) -> list[Event]: ...

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool: ...

    async def delete_session(self, session_id: str) -> bool: ...


async def what_happened(
    store: SessionReader, record: dict[str, Any]
) -> Literal["accepted", "abandoned", "in_flight"]:
    """What became of the follow-up whose prepared answer is `record` (module docstring)."""
    session_id, turn_id = str(record["sessionId"]), str(record["turnId"])
    events = await store.read(session_id)
    if any(_is_message_of(e, turn_id) for e in events):
        return "accepted"
    if time.time() - float(record.get("at") or 0) < ABANDONED_AFTER:
        return "in_flight"
    old = record.get("oldHash")
    if isinstance(old, str):
        await store.rotate_token(session_id, str(record["tokenHash"]), old)
    elif not events:
        # A new session that died between its creation and its first events (or before
        # either): no one holds its token, and the retry starts another, so it goes.
        await store.delete_session(session_id)
    return "abandoned"


def _is_message_of(event: Event, turn_id: str) -> bool:
    """`event` records the message of `turn_id`: accepted as that turn, or queued behind a
    busy one (`on_busy="queue"`) under that queue id, which its turn takes."""
    if event.type == EventType.MESSAGE_RECEIVED:
        return event.turn_id == turn_id
    return event.type == EventType.MESSAGE_QUEUED and event.data.get("queueId") == turn_id


__all__ = [
    "ABANDONED_AFTER",
    "PREPARED",
    "Intent",
    "SessionReader",
    "prepared_detail",
    "run_with",
    "take",
    "what_happened",
]
