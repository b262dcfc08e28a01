"""A service of the emulator that runs one loop in the background until it is closed."""

from __future__ import annotations

import asyncio
import contextlib


class BackgroundLoop:
    """`start()` runs `_run()` as a task; `aclose()` cancels it and waits for it to end."""

    _task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class Activity:
    """A pulse the stack's parts give when what they are doing changes (an invocation
    ended, the stream poller caught up), for `wait` to look again at a condition, with no
    timer in between."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    def changed(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """Until the next `changed` (True) or `timeout` seconds (False). Called right after
        a look at the condition, with no await in between, so no change is missed."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            return False
        finally:
            self._waiters.discard(waiter)
        return True
