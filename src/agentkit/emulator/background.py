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
