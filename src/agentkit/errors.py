"""The error tree of agentkit.

    AgentkitError
    ├── ProjectError              a mistake in an agent folder (carries diagnostics)
    ├── StoreError                the session store could not do what was asked
    │   ├── SessionNotFound
    │   ├── SessionExists
    │   └── InvalidId             an id that must never touch a path or a key
    ├── RunError                  a turn, tool or provider failed at run time
    │   ├── ModelError            a provider failed (retryable or not)
    │   ├── ToolError
    │   └── TurnInterrupted
    └── HttpError                 carries an HTTP status and a wire error code
        ├── BadRequest (400)  Unauthorized (401)  Forbidden (403)  NotFound (404)
        ├── MethodNotAllowed (405)  Conflict (409)  PayloadTooLarge (413)
        ├── UnsupportedMediaType (415)  MisdirectedRequest (421)
        ├── TooManyRequests (429, with Retry-After)

SDK exceptions (botocore, anthropic, openai) are translated at the adapter edge and never
leak past it.
"""

from __future__ import annotations

from typing import Any


class AgentkitError(Exception):
    """Base of every error agentkit raises on purpose."""


class ProjectError(AgentkitError):
    """The agent folder has error-severity diagnostics."""

    def __init__(self, message: str, diagnostics: list[Any] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


class StoreError(AgentkitError):
    """The session store failed."""


class SessionNotFound(StoreError):
    """No session with this id exists (or it was deleted)."""


class SessionExists(StoreError):
    """A session with this id already exists."""


class LeaseLost(StoreError):
    """A fenced append found its turn's lease held by someone else (or expired); nothing
    was written. The writer is a zombie and must stop."""


class InvalidId(StoreError, ValueError):
    """An id failed validation before it could touch a path or a table key."""


class RunError(AgentkitError):
    """A turn failed at run time."""


class ModelError(RunError):
    """A model provider failed. `retryable` errors were retried before being raised."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class ToolError(RunError):
    """A tool failed in a way the model should see."""


class TurnInterrupted(RunError):
    """The turn was preempted by a stop request or a follow-up."""

    def __init__(self, message: str = "turn interrupted") -> None:
        super().__init__(message)


class HttpError(AgentkitError):
    """An error with an HTTP status and a stable wire code (`{ok:false,error,message}`)."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str | None = None, *, code: str | None = None, **extra: Any):
        super().__init__(message or self.code)
        self.message = message
        if code is not None:
            self.code = code
        self.extra = extra
        # Response headers the error asks for (`Retry-After` on a 429 or a 503).
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        """The JSON body of this error on the wire."""
        out: dict[str, Any] = {"ok": False, "error": self.code}
        if self.message:
            out["message"] = self.message
        out.update(self.extra)
        return out


class TooManyRequests(HttpError):
    """A caller's limit is spent; `retry_after` seconds until it renews."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, **extra: Any) -> None:
        super().__init__(message, retryAfter=retry_after, **extra)
        self.retry_after = retry_after
        self.headers = {"retry-after": str(retry_after)}


class BadRequest(HttpError):
    status = 400
    code = "bad_request"


class Unauthorized(HttpError):
    status = 401
    code = "unauthorized"


class Forbidden(HttpError):
    status = 403
    code = "forbidden"


class NotFound(HttpError):
    status = 404
    code = "not_found"


class MethodNotAllowed(HttpError):
    status = 405
    code = "method_not_allowed"


class Conflict(HttpError):
    status = 409
    code = "conflict"


class PayloadTooLarge(HttpError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(HttpError):
    status = 415
    code = "unsupported_media_type"


class MisdirectedRequest(HttpError):
    status = 421
    code = "misdirected_request"
