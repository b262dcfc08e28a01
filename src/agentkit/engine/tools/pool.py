"""The bounded thread pool sync tools run in, apart from everything else in the process.

A sync tool cannot be stopped from outside: when its call times out or its turn is
stopped, the call is answered and the thread is abandoned, still running. Such threads stay
counted here until they return. When every thread is busy (running or abandoned), a new
sync call is refused at once ("tool pool saturated") instead of queueing without bound, so
hung tools can never starve the store, the server or other turns of threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

DEFAULT_SIZE = 16
SIZE_ENV = "AGENTKIT_TOOL_THREADS"


class PoolSaturated(Exception):
    """Every tool thread is busy; the call was not started."""


class ToolPool:
    """At most `size` sync tool calls at a time, abandoned ones included."""

    def __init__(self, size: int = DEFAULT_SIZE, *, label: str = "tool") -> None:
        self.size = max(1, size)
        self.label = label  # "tool", or "hook" for the hooks' own pool
        self._executor = ThreadPoolExecutor(self.size, thread_name_prefix=f"agentkit-{label}")
        self._busy = 0
        self._lock = threading.Lock()

    @property
    def busy(self) -> int:
        """Calls holding a thread now, answered-and-abandoned ones included."""
        return self._busy

    def _release(self) -> None:
        with self._lock:
            self._busy -= 1

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` in a pool thread (with this task's context variables).

        Cancelling the caller abandons the thread; it stays counted until `fn` returns.
        Raises `PoolSaturated` without running anything when no thread is free."""
        with self._lock:
            if self._busy >= self.size:
                raise PoolSaturated(
                    f"{self.label} pool saturated: {self._busy} sync {self.label} call(s) still"
                    " hold every thread (some may have timed out or been stopped); try again"
                    " later"
                )
            self._busy += 1
        ctx = contextvars.copy_context()

        def work() -> Any:
            try:
                return ctx.run(fn, *args)
            finally:
                self._release()

        future: Future[Any] = self._executor.submit(work)
        # Cancelled before a thread picked it up: `work` never runs, so free its slot here.
        future.add_done_callback(lambda f: self._release() if f.cancelled() else None)
        return await asyncio.wrap_future(future)


_POOL: ToolPool | None = None
_POOL_LOCK = threading.Lock()


def tool_pool() -> ToolPool:
    """The process's tool pool (`AGENTKIT_TOOL_THREADS` threads, 16 by default)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            try:
                size = int(os.environ.get(SIZE_ENV, "") or DEFAULT_SIZE)
            except ValueError:
                size = DEFAULT_SIZE
            _POOL = ToolPool(size)
        return _POOL
