"""Sessions: ids, continuation tokens, ownership, and the state folded from events.

A session's metadata lives in a `SessionRecord`; everything else about it (status, pending
approvals, conversation) is a fold over its event stream. HTTP continuation tokens are
random and opaque; the store keeps only their SHA-256, so a leaked store leaks no live
token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

from agentkit.errors import InvalidId
from agentkit.events import Event, EventType, now_iso

SESSION_ID_RE = re.compile(r"^ses_[A-Za-z0-9_-]{16,64}$")
HTTP_CHANNEL = "http"
Mode = Literal["chat", "task"]


def new_session_id() -> str:
    """`ses_` plus 128 bits of URL-safe randomness."""
    return "ses_" + secrets.token_urlsafe(16)


def validate_session_id(session_id: str) -> str:
    """Return the id unchanged, or raise `InvalidId` before it can touch a path or key."""
    if not isinstance(session_id, str) or not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidId(f"invalid session id: {session_id[:80]!r}")
    return session_id


def new_http_token() -> str:
    """A fresh opaque continuation token for the HTTP channel."""
    return "http:" + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a continuation token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(token: str, token_hash: str | None) -> bool:
    """Constant-time check of a presented token against the stored hash."""
    if token_hash is None:
        return False
    return hmac.compare_digest(hash_token(token), token_hash)


# HTTP sessions have no channel key and their token rotates, so their conversation is named
# by the session id. The prefix keeps it from being mistaken for a token: it is no credential
# (an HTTP follow-up needs the current token), only a stable, host-internal name.
HTTP_KEY_PREFIX = "session:"


def conversation_key(record: SessionRecord) -> str | None:
    """The stable key that names a session's conversation (`ctx.session.continuation_key`).

    A channel's own key when it has one; for an HTTP session, `session:<id>`, which stays
    the same across token rotation. None for a session that cannot be addressed again.
    """
    if record.continuation_key is not None:
        return record.continuation_key
    if record.channel_id == HTTP_CHANNEL:
        return HTTP_KEY_PREFIX + record.id
    return None


def session_id_of_key(channel_id: str, key: str) -> str | None:
    """The session id an HTTP conversation key names (`session:<id>`, or a bare id), else
    None. Keys of other channels are looked up in the store instead."""
    if channel_id != HTTP_CHANNEL:
        return None
    candidate = key.removeprefix(HTTP_KEY_PREFIX)
    return candidate if SESSION_ID_RE.fullmatch(candidate) else None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """The stored metadata of one session (never the conversation itself)."""

    id: str
    channel_id: str = HTTP_CHANNEL
    mode: Mode = "chat"
    principal: str | None = None
    token_hash: str | None = None
    continuation_key: str | None = None  # channel-defined, e.g. "pr:owner/repo#1"
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    metadata: dict[str, Any] = field(default_factory=dict)

    def with_token_hash(self, token_hash: str) -> SessionRecord:
        return replace(self, token_hash=token_hash, updated_at=now_iso())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "channelId": self.channel_id,
            "mode": self.mode,
            "principal": self.principal,
            "tokenHash": self.token_hash,
            "continuationKey": self.continuation_key,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SessionRecord:
        mode = raw.get("mode", "chat")
        return cls(
            id=str(raw["id"]),
            channel_id=str(raw.get("channelId", HTTP_CHANNEL)),
            mode="task" if mode == "task" else "chat",
            principal=raw.get("principal"),
            token_hash=raw.get("tokenHash"),
            continuation_key=raw.get("continuationKey"),
            created_at=str(raw.get("createdAt") or now_iso()),
            updated_at=str(raw.get("updatedAt") or now_iso()),
            metadata=dict(raw.get("metadata") or {}),
        )


class SessionStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    COMPLETED = "completed"
    FAILED = "failed"


def fold_status(events: Iterable[Event]) -> SessionStatus:
    """The status of a session, folded from its events.

    A turn is running from `message.received`/`turn.started` until a terminal turn event;
    an approval request not yet resolved parks it; task sessions end completed or failed.
    """
    status = SessionStatus.IDLE
    pending: set[str] = set()
    for ev in events:
        t = ev.type
        if t in (EventType.MESSAGE_RECEIVED, EventType.TURN_STARTED):
            status = SessionStatus.RUNNING
        elif t == EventType.ACTION_APPROVAL_REQUESTED:
            pending.add(str(ev.data.get("callId")))
            status = SessionStatus.AWAITING_APPROVAL
        elif t == EventType.ACTION_APPROVAL_RESOLVED:
            pending.discard(str(ev.data.get("callId")))
            # A decided direct tool call (no turn) resumes nothing: the session is idle again.
            resumed = SessionStatus.RUNNING if ev.turn_id is not None else SessionStatus.IDLE
            status = SessionStatus.AWAITING_APPROVAL if pending else resumed
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED, EventType.SESSION_WAITING):
            pending.clear()
            status = SessionStatus.IDLE
        elif t == EventType.SESSION_COMPLETED:
            status = SessionStatus.COMPLETED
        elif t == EventType.SESSION_FAILED:
            status = SessionStatus.FAILED
    return status


# After any of these the fold's state is the same whatever came before (idle, nothing
# pending), so folding from the last one gives the status of the whole stream.
_STATUS_RESETS = frozenset(
    {EventType.TURN_COMPLETED, EventType.TURN_FAILED, EventType.SESSION_WAITING}
)


def fold_status_recent(events: Sequence[Event]) -> SessionStatus:
    """`fold_status` of `events`, folding only from the last turn-ending event (the same
    answer: see `_STATUS_RESETS`), so a long history costs a short backwards scan."""
    for pos in range(len(events) - 1, -1, -1):
        if events[pos].type in _STATUS_RESETS:
            return fold_status(events[pos:])
    return fold_status(events)


async def fold_status_tail(
    read: Callable[[int, int], Awaitable[list[Event]]], length: int, *, window: int = 16
) -> SessionStatus:
    """`fold_status` of a stream of `length` events, reading only its tail.

    `read(start, limit)` returns events from `start`. Windows grow backwards from the end
    until one holds a turn-ending event (or the stream's start is reached), so a settled
    session costs one small read however long its history.
    """
    tail: list[Event] = []
    end = max(0, length)
    while True:
        start = max(0, end - window)
        chunk = await read(start, end - start) if end > start else []
        tail = chunk + tail
        for pos in range(len(chunk) - 1, -1, -1):
            if chunk[pos].type in _STATUS_RESETS:
                return fold_status(tail[pos:])
        if start == 0:
            return fold_status(tail)
        end = start
        window *= 4


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling. `admin` (only `serve --dev` on loopback) may see every session."""

    id: str
    admin: bool = False

    def owns(self, record: SessionRecord) -> bool:
        return self.admin or (record.principal is not None and record.principal == self.id)
