"""Validation of every id a store turns into a path or a key, and the listing cursor.

Session ids follow `agentkit.sessions.validate_session_id`. Reminder ids and tool-call ids
are short names of letters, digits, `_`, `-` and `.` that start with a letter or digit, so
they can never climb out of a folder. Idempotency keys are free text (webhook delivery ids,
`turn:<session>:<turn>`): stores hash them before they touch a path or a key.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from agentkit.errors import InvalidId
from agentkit.sessions import validate_session_id

__all__ = [
    "created_ms",
    "decode_cursor",
    "encode_cursor",
    "hash_key",
    "is_valid_name",
    "validate_idempotency_key",
    "validate_name",
    "validate_session_id",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_CURSOR_RE = re.compile(r"^(\d{1,16})~(ses_[A-Za-z0-9_-]{16,64})$")
MAX_KEY_LENGTH = 1024


def is_valid_name(value: object) -> bool:
    """Whether `value` is a safe short name (the rule `validate_name` enforces)."""
    return isinstance(value, str) and _NAME_RE.fullmatch(value) is not None


def validate_name(value: str, what: str = "id") -> str:
    """Return a reminder or tool-call id unchanged, or raise `InvalidId`."""
    if not is_valid_name(value):
        shown = value[:80] if isinstance(value, str) else value
        raise InvalidId(f"invalid {what}: {shown!r}")
    return value


def validate_idempotency_key(key: str) -> str:
    """Return the key unchanged if it is a non-empty string of at most 1024 characters."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        shown = key[:80] if isinstance(key, str) else key
        raise InvalidId(f"invalid idempotency key: {shown!r}")
    return key


def hash_key(key: str) -> str:
    """The SHA-256 hex digest of a validated idempotency key (safe as a file name)."""
    return hashlib.sha256(validate_idempotency_key(key).encode("utf-8")).hexdigest()


def created_ms(created_at: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 time; 0 when it does not parse.

    Listings sort on this (newest first), so every adapter orders sessions the same way.
    """
    try:
        return max(0, int(datetime.fromisoformat(created_at).timestamp() * 1000))
    except (TypeError, ValueError):
        return 0


def encode_cursor(created: int, session_id: str) -> str:
    """The opaque cursor pointing just after the session (`created`, `session_id`)."""
    return f"{created:016d}~{session_id}"


def decode_cursor(cursor: str) -> tuple[int, str]:
    """Parse a cursor from `encode_cursor`; `InvalidId` for anything else."""
    match = _CURSOR_RE.fullmatch(cursor) if isinstance(cursor, str) else None
    if match is None:
        raise InvalidId(f"invalid listing cursor: {str(cursor)[:80]!r}")
    return int(match.group(1)), match.group(2)
