"""Limits that keep stalled clients from exhausting a uvicorn server (slowloris).

uvicorn bounds what it can on its own: the size of a request head (h11's incomplete-event
limit) and how long an idle keep-alive connection is kept. It sets no deadline on the first
request of a connection and never refuses a connection, so a client that opens sockets and
sends a few bytes on each holds one file descriptor per socket for as long as it likes;
once the process runs out of descriptors nobody else is served. `guarded_config` builds the
uvicorn config with its own limits set and an HTTP protocol that adds what uvicorn lacks:

- the request head must be complete within `header_timeout` seconds of the connection
  opening (or of the previous response on a kept-alive connection);
- a request body must keep arriving at `min_body_rate` bytes per second or better,
  measured over windows of `body_timeout` seconds;
- at most `max_connections` connections are open at once: a new one past the limit pushes
  out the connection that has waited longest without sending a complete request head,
  and when every connection is busy with a request the new one gets a 503 and is closed.

A stalled connection is cut (its socket closed at once), never answered. The accept-error
log (`quiet_accept_errors`) keeps a process out of descriptors for other reasons from
writing a traceback per failed `accept()`.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass, field
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

# uvicorn's own logger: these lines sit next to its other connection-level ones on stderr.
log = logging.getLogger("uvicorn.error")

KEEP_ALIVE_SECONDS = 5
MAX_HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS_CEILING = 1000
LOG_EVERY_SECONDS = 10.0
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 20\r\nconnection: close\r\n\r\ntoo many connections"
)


def default_max_connections() -> int:
    """1000, or half the process's open-file limit (`ulimit -n`) when that is lower: the
    other half stays free for the server's own files (sessions, logs, the agent's tools)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CEILING
    return max(8, min(MAX_CONNECTIONS_CEILING, soft // 2))


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How long and how many: see the module docstring and docs/auth.md."""

    header_timeout: float = 10.0
    body_timeout: float = 10.0
    min_body_rate: int = 1024
    max_connections: int = field(default_factory=default_max_connections)

    def problems(self) -> list[str]:
        """What is wrong with these numbers, as `--flag` messages (empty when fine)."""
        wrong = []
        if not self.header_timeout > 0:
            wrong.append("--header-timeout must be more than 0 seconds")
        if not self.body_timeout > 0:
            wrong.append("--body-timeout must be more than 0 seconds")
        if self.min_body_rate < 0:
            wrong.append("--min-body-rate must not be negative")
        if self.max_connections < 1:
            wrong.append("--max-connections must be at least 1")
        return wrong


class RateLimitedLog:
    """One log line per `every` seconds for a repeating problem, with how many were held
    back since the last one."""

    def __init__(self, text: str, every: float = LOG_EVERY_SECONDS) -> None:
        self.text = text
        self.every = every
        self._last = -every
        self._held = 0

    def note(self, detail: str = "") -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            self._held += 1
            return
        more = f" ({self._held} more since the last report)" if self._held else ""
        log.warning("%s%s%s", self.text, f": {detail}" if detail else "", more)
        self._last = now
        self._held = 0


class _Guard:
    """What the connections of one server share: the limits, and the connections still
    waiting for their request head, oldest first."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.waiting: dict[GuardedH11Protocol, None] = {}
        self.cut = RateLimitedLog("closed stalled connections (slow request head or body)")
        self.refused = RateLimitedLog(
            f"refused connections past --max-connections {limits.max_connections}"
        )


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the connection limit above."""

    guard: _Guard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.guard.limits.max_connections and not self._evict():
            self.guard.refused.note()
            self.connections.discard(self)
            transport.write(_BUSY)
            transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        reading_body = self.conn.their_state is h11.SEND_BODY
        super().data_received(data)
        if reading_body:
            self._body_bytes += len(data)
        self._follow_phase()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_phase()

    def _follow_phase(self) -> None:
        """Arm the deadline of whatever the client owes next: a head, a body, or nothing
        (the request is with the app, which may stream for as long as it likes)."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE and self.conn.our_state is h11.IDLE:
            if self._head_timer is None:
                self._await_head()
            return
        self._stop_head_timer()
        if state is h11.SEND_BODY:
            if self._body_timer is None:
                self._body_bytes = 0
                self._body_timer = self.loop.call_later(
                    self.guard.limits.body_timeout, self._check_body_rate
                )
        else:
            self._stop_body_timer()

    def _await_head(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.guard.limits.header_timeout, self._cut)
        self.guard.waiting[self] = None

    def _check_body_rate(self) -> None:
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        limits = self.guard.limits
        # While uvicorn holds reading back because the app is slow to read, the client is
        # not the one stalling.
        if (
            not self.flow.read_paused
            and self._body_bytes < limits.min_body_rate * limits.body_timeout
        ):
            self._cut()
            return
        self._body_bytes = 0
        self._body_timer = self.loop.call_later(limits.body_timeout, self._check_body_rate)

    def _evict(self) -> bool:
        """Cut the connection that has waited longest for its request head, if any."""
        for oldest in self.guard.waiting:
            if oldest is not self:
                oldest._cut()
                return True
        return False

    def _cut(self) -> None:
        self._stop_timers()
        if not self.transport.is_closing():
            self.guard.cut.note()
            self.transport.abort()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.guard.waiting.pop(self, None)

    def _stop_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _stop_timers(self) -> None:
        self._stop_head_timer()
        self._stop_body_timer()


def guarded_config(app: Any, limits: ConnectionLimits, **options: Any) -> uvicorn.Config:
    """A uvicorn config for `app` that serves under `limits` (other options as uvicorn's)."""
    protocol = type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": _Guard(limits)})
    return uvicorn.Config(
        app,
        http=protocol,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        **options,
    )


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Report a failing `accept()` (out of file descriptors, say) once per ten seconds.

    asyncio reports each failure with a traceback, once per pending connection and again
    for each retry it schedules: a process out of descriptors writes thousands of lines a
    second. Everything else still goes to the loop's usual handler."""
    accept = RateLimitedLog("cannot accept connections")
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == "socket.accept() out of system resource":
            exc = context.get("exception")
            accept.note(f"{exc.strerror if isinstance(exc, OSError) else exc}")
            return
        if isinstance(context.get("exception"), ValueError) and "_start_serving" in repr(
            context.get("handle")
        ):
            # A retry asyncio scheduled after such a failure, run after the listening
            # socket was closed at shutdown: nothing is lost, nothing to report.
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
