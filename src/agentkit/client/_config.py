"""Client settings shared by the sync and async clients: timeouts, retries, backoff, and the
retry bookkeeping both of them drive (no I/O here)."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

# Answers a proxy or load balancer gives while the server behind it restarts: worth another
# try for a call that is safe to repeat.
RETRYABLE_STATUS = frozenset({502, 503, 504})

# A refused or broken connection, or an answer that did not come in time. The request may
# or may not have reached the server, so only a call that is safe to repeat (a GET, or a
# write carrying its idempotency key) is tried again. Local mistakes (a bad URL) are not.
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

IDEMPOTENCY_HEADER = "Idempotency-Key"

# What a server answers a keyed write whose first try it is still answering (the client
# gave up on it, or its answer was lost): the same try, after `Retry-After`, gets the
# first try's answer.
KEY_IN_USE = "idempotency_key_in_use"


@dataclass(frozen=True, slots=True)
class Settings:
    """`timeout` applies to each request (a stream waits for events with no read timeout
    unless `stream_window` or a `wait` deadline bounds it); `retries` is how often a call
    is tried again after a connection error, a read timeout or a 502/503/504, all within
    `retry_deadline` seconds of its first try; `stream_retries` is how many failed
    reconnects in a row a stream tolerates. The pause before a retry doubles per failure
    from `backoff` up to `backoff_max` seconds, with random jitter.

    A write is retried too: it carries an `Idempotency-Key`, the same on every try, so a
    server that has already acted answers with its original response instead of acting
    twice."""

    timeout: float = 30.0
    retries: int = 2
    stream_retries: int = 5
    backoff: float = 0.25
    backoff_max: float = 5.0
    stream_window: float | None = None
    retry_deadline: float = 60.0

    def delay(self, failures: int) -> float:
        """The pause after `failures` failures in a row: exponential, capped, and jittered
        ("equal jitter": between half and all of the step) so that many clients cut off
        together do not come back together."""
        step = min(self.backoff_max, self.backoff * 2 ** max(0, failures - 1))
        return float(step * random.uniform(0.5, 1.0))

    def window(self, deadline: float | None, session_id: str) -> float | None:
        """The stream window to ask for: `stream_window`, cut to what is left of a
        `deadline` (`TimeoutError` once it has passed)."""
        window = self.stream_window
        left = check_deadline(deadline, session_id)
        if left is not None:
            window = left if window is None else min(window, left)
        return window

    def stream_timeout(self, window: float | None, left: float | None) -> httpx.Timeout:
        """A stream request's timeouts: reads wait out the window, never past a deadline
        `left` seconds away (so a stream that stalls mid-body cannot outlast it)."""
        read = None if window is None else window + self.timeout
        if left is None:
            return httpx.Timeout(self.timeout, read=read)
        read = left if read is None else min(read, left)
        return httpx.Timeout(min(self.timeout, left), read=read)


@dataclass(slots=True)
class Attempts:
    """The tries of one call: how many failed, and whether another is allowed before the
    total deadline."""

    settings: Settings
    failures: int = 0
    deadline: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.settings.retry_deadline

    def timeout(self) -> httpx.Timeout | httpx._client.UseClientDefault:
        """The next try's timeout: the HTTP client's own, unless less than that is left of
        the deadline."""
        remaining = left(self.deadline)
        if remaining >= self.settings.timeout:
            return httpx.USE_CLIENT_DEFAULT
        return httpx.Timeout(max(0.001, remaining))

    def retry_after(self, at_least: float = 0.0) -> float | None:
        """Count a failure; the pause before the next try (`at_least` seconds, when the
        server asked for that), or None when none is left."""
        self.failures += 1
        pause = max(self.settings.delay(self.failures), at_least)
        if self.failures > self.settings.retries or pause >= left(self.deadline):
            return None
        return pause


def server_pause(response: httpx.Response) -> float | None:
    """The least pause before another try of the call `response` answers, when it is worth
    one: 0 after a 502/503/504 (the backoff decides), the `Retry-After` seconds of a
    `409 idempotency_key_in_use`; None when the answer stands."""
    if response.status_code in RETRYABLE_STATUS:
        return 0.0
    if response.status_code != 409 or IDEMPOTENCY_HEADER not in response.request.headers:
        return None
    try:
        in_use = response.json().get("error") == KEY_IN_USE
    except (ValueError, AttributeError):
        return None
    if not in_use:
        return None
    try:
        return max(0.0, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


def left(deadline: float) -> float:
    """Seconds until `deadline` (a `time.monotonic()` value), 0 once it has passed."""
    return max(0.0, deadline - time.monotonic())


def check_deadline(deadline: float | None, session_id: str) -> float | None:
    """Seconds left before `deadline`; `TimeoutError` once it has passed."""
    if deadline is None:
        return None
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError(f"session {session_id}: wait timed out")
    return remaining


def pause_within(pause: float, deadline: float | None) -> float:
    """`pause`, cut so that it ends by `deadline`."""
    return pause if deadline is None else min(pause, left(deadline))


def write_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` plus a fresh idempotency key: one per write, reused by its retries."""
    return {**headers, IDEMPOTENCY_HEADER: str(uuid.uuid4())}


def auth_headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def stream_params(start: int, window: float | None) -> dict[str, Any]:
    params: dict[str, Any] = {"startIndex": start}
    if window is not None:
        params["window"] = window
    return params


def session_path(session_id: str) -> str:
    return f"/v1/session/{session_id}"
