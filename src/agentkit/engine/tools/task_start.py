"""Tasks that start running at once, where the interpreter can (Python 3.12 and later).

A model step or a tool call runs in a task of its own so that a stop can cancel it. Most
of them finish without ever waiting (a scripted model, a tool that only computes): started
eagerly, such a task is done when it is created, and the turn goes on without a trip
through the event loop. One that does wait is an ordinary task from its first wait on.
Before 3.12 these are plain tasks, scheduled as usual.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def start_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """`coro` as a task that runs up to its first suspension before this returns."""
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        return asyncio.Task(coro, loop=loop, eager_start=True)
    return loop.create_task(coro)


__all__ = ["start_task"]
