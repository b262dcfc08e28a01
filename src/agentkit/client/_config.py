"""Client settings shared by the sync and async clients: timeouts, retries, backoff."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

# Answers a proxy or load balancer gives while the server behind it restarts: worth another
# try for a call that is safe to repeat.
RETRYABLE_STATUS = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class Settings:
    """`timeout` applies to each request (a stream waits for events with no read timeout
    unless `stream_window` bounds it); `retries` is how often an idempotent call (a GET) is
    tried again after a connection error or a 502/503/504; `stream_retries` is how many
    failed reconnects in a row a stream tolerates; `backoff` doubles per failure, up to
    `backoff_max` seconds. Calls that change something (POST) are never retried."""

    timeout: float = 30.0
    retries: int = 2
    stream_retries: int = 5
    backoff: float = 0.25
    backoff_max: float = 5.0
    stream_window: float | None = None

    def delay(self, failures: int) -> float:
        return float(min(self.backoff_max, self.backoff * 2 ** max(0, failures - 1)))

    def stream_timeout(self, window: float | None) -> httpx.Timeout:
        read = None if window is None else window + self.timeout
        return httpx.Timeout(self.timeout, read=read)


def auth_headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def stream_params(start: int, window: float | None) -> dict[str, Any]:
    params: dict[str, Any] = {"startIndex": start}
    if window is not None:
        params["window"] = window
    return params


def session_path(session_id: str) -> str:
    return f"/v1/session/{session_id}"
