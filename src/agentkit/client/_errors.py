"""The client's errors.

ClientError
├── ApiError              the server answered `{ok:false, error, message}`
│   ├── AuthError         401 / 403
│   ├── NotFoundError     404
│   └── ConflictError     409
│       ├── StaleToken    the continuation token was already rotated
│       └── SessionBusy   a turn is running and could not be interrupted
├── ConnectionLost        the server could not be reached (after the allowed retries)
├── StreamGap             the stream skipped an index: an event is missing
└── TurnError             the turn being waited on failed or parked
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agentkit.errors import AgentkitError


class ClientError(AgentkitError):
    """Base of every error the client raises."""


class ApiError(ClientError):
    """An error answer: `status`, the server's `code` (`error`) and `message`."""

    def __init__(self, status: int, code: str, message: str | None, body: dict[str, Any]):
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.retried = False  # the answer to a retry, after an earlier try's answer was lost
        super().__init__(f"{status} {code}" + (f": {message}" if message else ""))


class AuthError(ApiError):
    """401 (no auth policy admitted the request) or 403 (not the session's owner)."""


class NotFoundError(ApiError):
    """404: unknown session, tool, schedule, reminder or eval run."""


class ConflictError(ApiError):
    """409: stale token, busy session, task session, eval run already running."""


class StaleToken(ConflictError):
    """409 `stale_token`: the continuation token was rotated by another accepted message.

    The message was NOT accepted and is never resent by the client. Another sender holding
    this session's token (a second `Session` object, another process, a retried request
    whose first attempt did arrive) got its follow-up in first. Read the stream to see what
    was said, then send again with the current token (`Session.adopt_token`) if you still
    mean to.
    """

    def __str__(self) -> str:
        if self.retried:
            # A server that does not replay idempotent writes meets the retry of a follow-up
            # whose first try it accepted (and whose answer was lost) with the rotated token.
            return (
                super().__str__() + " (answering a retry: an earlier try whose answer was "
                "lost may have been accepted; read the stream to see)"
            )
        return (
            super().__str__() + " (another message rotated this session's token first; "
            "yours was not accepted and was not resent)"
        )


class SessionBusy(ConflictError):
    """409 `session_busy`: a turn is running and could not be interrupted in time."""


class ConnectionLost(ClientError):
    """The server could not be reached, or the connection broke, after the allowed retries."""


class StreamGap(ClientError):
    """The stream jumped from `expected` to `got`: events in between are missing."""

    def __init__(self, session_id: str, expected: int, got: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.got = got
        super().__init__(
            f"session {session_id}: events {expected}..{got - 1} are missing from the stream"
        )


class TurnError(ClientError):
    """The turn waited on did not produce a reply: it failed, or parked on an approval."""

    def __init__(self, message: str, *, parked: bool = False) -> None:
        self.parked = parked
        super().__init__(message)


_BY_STATUS: dict[int, type[ApiError]] = {
    401: AuthError,
    403: AuthError,
    404: NotFoundError,
    409: ConflictError,
}
_BY_CODE: dict[str, type[ApiError]] = {"stale_token": StaleToken, "session_busy": SessionBusy}


def api_error(status: int, content: bytes) -> ApiError:
    """The exception for an error response, from its status and JSON body."""
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    code = str(body.get("error") or f"http_{status}")
    message = body.get("message")
    if message is None and not body:
        message = content.decode("utf-8", "replace")[:200] or None
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, ApiError)
    return cls(status, code, None if message is None else str(message), body)


def check(response: httpx.Response, *, retried: bool = False) -> httpx.Response:
    """`response` if it is a success; the matching `ApiError` otherwise (body already read).
    `retried`: the response answers a retry (an earlier try failed)."""
    if response.is_success:
        return response
    error = api_error(response.status_code, response.content)
    error.retried = retried
    raise error


def refuse(response: httpx.Response) -> None:
    """Raise for a stream request that was not answered with 200: an `ApiError`, or a
    transport error for a 502/503/504 (a proxy's answer while the server restarts), which
    the stream treats like a dropped connection and retries."""
    if response.status_code in (502, 503, 504):
        raise httpx.RemoteProtocolError(f"{response.status_code} from the server")
    raise api_error(response.status_code, response.content)
