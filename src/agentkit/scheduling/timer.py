"""The `Timer` port: wake a key at an instant. Schedules and reminders both sit on it.

Keys are `schedule:<id>` and `reminder:<id>`; whoever composes the host routes a fired key
back to `ScheduleRunner.fire` or `ReminderService.fire` (see `route_timer_key`). Locally a
`LocalTimer` keeps the wakes in process on a `Clock`; on AWS the same calls become
EventBridge Scheduler schedules whose payload carries the key.

`arm` always names the next instant. A recurring thing passes its `Recurrence` as a hint:
the local timer ignores it (the owner re-arms after every firing), an adapter with native
recurring schedules may create one schedule and treat later re-arms as no-ops.

Time is read from a `Clock` so tests never sleep: `ManualClock.advance` moves time forward
and runs every callback that comes due, in time order, awaiting each one.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

__all__ = [
    "Clock",
    "FireHandler",
    "LocalTimer",
    "ManualClock",
    "Recurrence",
    "SystemClock",
    "Timer",
    "TimerHandle",
    "reminder_key",
    "schedule_key",
    "split_key",
]

log = logging.getLogger("agentkit.scheduling.timer")

FireHandler = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[None] | None]


def schedule_key(schedule_id: str) -> str:
    return f"schedule:{schedule_id}"


def reminder_key(reminder_id: str) -> str:
    return f"reminder:{reminder_id}"


def split_key(key: str) -> tuple[Literal["schedule", "reminder"], str]:
    """`("schedule", id)` or `("reminder", id)`; `ValueError` for anything else."""
    kind, sep, ident = key.partition(":")
    if not sep or not ident or kind not in ("schedule", "reminder"):
        raise ValueError(f"not a timer key: {key!r}")
    return ("schedule" if kind == "schedule" else "reminder"), ident


@dataclass(frozen=True, slots=True)
class Recurrence:
    """How a recurring key repeats: every `spec` ("30m") or on a 5-field cron."""

    kind: Literal["every", "cron"]
    spec: str


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Where time comes from, and how a callback is run at an instant."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def call_at(self, at: datetime, callback: Callback) -> TimerHandle:
        """Run `callback` at `at` (at once if it is already past)."""
        ...


class Timer(Protocol):
    """Wake a key at an instant. Re-arming a key replaces its previous instant."""

    @property
    def clock(self) -> Clock: ...

    async def arm(self, key: str, at: datetime, *, recurrence: Recurrence | None = None) -> None:
        """Fire `key` at `at` (once). `recurrence` is a hint for adapters that repeat natively."""
        ...

    async def disarm(self, key: str) -> None:
        """Forget `key`; a no-op if it is not armed."""
        ...


class SystemClock:
    """Wall-clock time on the running asyncio loop."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def call_at(self, at: datetime, callback: Callback) -> TimerHandle:
        delay = max(0.0, (at - self.now()).total_seconds())
        return asyncio.get_running_loop().call_later(delay, self._run, callback)

    def _run(self, callback: Callback) -> None:
        result = callback()
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


class _ManualHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told. For tests and benchmarks of timer logic."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime(2030, 1, 7, tzinfo=UTC)).astimezone(UTC)
        self._heap: list[tuple[datetime, int, _ManualHandle, Callback]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        return self._now

    def call_at(self, at: datetime, callback: Callback) -> TimerHandle:
        handle = _ManualHandle()
        heapq.heappush(self._heap, (at.astimezone(UTC), next(self._seq), handle, callback))
        return handle

    def pending(self) -> list[datetime]:
        """Instants of the callbacks still waiting, earliest first."""
        return sorted(at for at, _, h, _ in self._heap if not h.cancelled)

    async def advance(self, delta: timedelta | float = 0) -> int:
        """Move time forward by `delta` (seconds or a timedelta), running what comes due.

        Callbacks run in time order with the clock set to their instant, each awaited before
        the next, so callbacks they arm on the way are honoured too. Returns how many ran.
        """
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        return await self.advance_to(self._now + step)

    async def advance_to(self, target: datetime) -> int:
        """Move time forward to `target`, running what comes due (see `advance`)."""
        target = target.astimezone(UTC)
        ran = 0
        while self._heap and self._heap[0][0] <= target:
            at, _, handle, callback = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self._now = max(self._now, at)
            result = callback()
            if inspect.isawaitable(result):
                await result
            ran += 1
        self._now = max(self._now, target)
        return ran


class LocalTimer:
    """In-process timer: one clock callback per armed key, fired through `handler`."""

    def __init__(self, clock: Clock | None = None, handler: FireHandler | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self._handler = handler
        self._armed: dict[str, tuple[datetime, TimerHandle]] = {}

    @property
    def clock(self) -> Clock:
        return self._clock

    def set_handler(self, handler: FireHandler) -> None:
        """Where fired keys go (set once the services that own the keys exist)."""
        self._handler = handler

    async def arm(self, key: str, at: datetime, *, recurrence: Recurrence | None = None) -> None:
        await self.disarm(key)
        handle = self._clock.call_at(at, lambda: self._fire(key, at))
        self._armed[key] = (at, handle)

    async def disarm(self, key: str) -> None:
        entry = self._armed.pop(key, None)
        if entry is not None:
            entry[1].cancel()

    def armed(self) -> dict[str, datetime]:
        """Armed keys and their instants."""
        return {key: at for key, (at, _) in self._armed.items()}

    async def close(self) -> None:
        """Cancel every armed key."""
        for _, handle in self._armed.values():
            handle.cancel()
        self._armed.clear()

    async def _fire(self, key: str, at: datetime) -> None:
        entry = self._armed.get(key)
        if entry is None or entry[0] != at:
            return  # re-armed or disarmed since
        del self._armed[key]
        if self._handler is None:
            log.warning("timer %s fired with no handler attached", key)
            return
        try:
            await self._handler(key)
        except Exception:  # a failed firing must not stop the timer
            log.exception("timer %s failed", key)
