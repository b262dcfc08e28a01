"""The stores' own worker threads for blocking work (file I/O, boto3 calls).

Kept apart from the default executor and from the tool pool (`engine.toolpool`): a tool
that hangs, or a burst of other work, never leaves the store waiting for a thread. The
pool is per process and bounded (`AGENTKIT_STORE_THREADS`, 32 by default); blocking store
calls are short, so a bounded queue in front of it drains quickly.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            try:
                size = int(os.environ.get("AGENTKIT_STORE_THREADS", "") or 32)
            except ValueError:
                size = 32
            _POOL = ThreadPoolExecutor(max(1, size), thread_name_prefix="agentkit-store")
        return _POOL


async def offload(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)` in a store thread (with this task's context variables)."""
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_pool(), call)
