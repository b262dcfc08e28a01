"""Wake followers when a session gets new events, across threads and event loops.

Each follower registers a future on its own loop before it looks for events (so an append
between the look and the wait cannot be missed). `notify` completes every registered
future: directly when the appender runs on the follower's own loop thread (the common case
of `agentkit serve`, where turns and streams share one loop), through
`call_soon_threadsafe` otherwise, so appenders on any thread or loop can wake it.

`notify` says how many followers on the caller's own loop it woke: such an appender should
then yield to the loop once (`yield_to_followers`), or the followers would only run when
the appender next waits for something, which a turn doing only quick local work may not do
until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator


class Waiter:
    """One follower's pending wake-up."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[bool] = self.loop.create_future()

    def _set(self, woken: bool) -> None:
        if not self.future.done():
            self.future.set_result(woken)

    def wake(self) -> bool:
        """Complete the wait; True when that was done here, on the follower's own loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._set(True)
            return True
        with contextlib.suppress(RuntimeError):  # the follower's loop already closed
            self.loop.call_soon_threadsafe(self._set, True)
        return False

    async def wait(self, timeout: float) -> bool:
        """True if woken, False on timeout."""
        if self.future.done():
            return self.future.result()
        if timeout <= 0:
            return False
        # A timer on the future itself: `wait_for` and `shield` would each add a task or a
        # callback hop between the append and the follower running.
        timer = self.loop.call_later(timeout, self._set, False)
        try:
            return await self.future
        finally:
            timer.cancel()


class Notifier:
    """Registered followers per key (a session id, or a file path)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[Waiter]] = {}

    @contextlib.contextmanager
    def register(self, key: str) -> Iterator[Waiter]:
        waiter = Waiter()
        with self._lock:
            self._waiters.setdefault(key, set()).add(waiter)
        try:
            yield waiter
        finally:
            with self._lock:
                group = self._waiters.get(key)
                if group is not None:
                    group.discard(waiter)
                    if not group:
                        del self._waiters[key]

    def notify(self, key: str) -> int:
        """Wake the key's followers; returns how many of them wait on the caller's loop."""
        with self._lock:
            group = list(self._waiters.get(key, ()))
        return sum(waiter.wake() for waiter in group)


async def yield_to_followers(woken: int) -> None:
    """Let followers woken on this loop run before the appender goes on (see above)."""
    if woken:
        await asyncio.sleep(0)
