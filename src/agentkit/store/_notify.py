"""Wake followers when a session gets new events, across threads and event loops.

Each follower registers a future on its own loop before it looks for events (so an append
between the look and the wait cannot be missed); `notify` completes every registered
future through `call_soon_threadsafe`, so appenders on any thread or loop can wake it.
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
        self.future: asyncio.Future[None] = self.loop.create_future()

    def wake(self) -> None:
        def _set() -> None:
            if not self.future.done():
                self.future.set_result(None)

        with contextlib.suppress(RuntimeError):  # the follower's loop already closed
            self.loop.call_soon_threadsafe(_set)

    async def wait(self, timeout: float) -> bool:
        """True if woken, False on timeout."""
        if timeout <= 0:
            return self.future.done()
        try:
            await asyncio.wait_for(asyncio.shield(self.future), timeout)
        except TimeoutError:
            return False
        return True


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

    def notify(self, key: str) -> None:
        with self._lock:
            group = list(self._waiters.get(key, ()))
        for waiter in group:
            waiter.wake()

    def notify_all(self) -> None:
        """Wake every follower once (each looks again and finds what is new, if anything)."""
        with self._lock:
            group = [w for waiters in self._waiters.values() for w in waiters]
        for waiter in group:
            waiter.wake()
