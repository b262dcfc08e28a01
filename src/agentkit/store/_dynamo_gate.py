"""A first-come, first-served gate per session, usable from any thread and event loop.

`DynamoDBStore` lets one append per session through at a time within a store instance, so
the writers of one process never race each other for an index (each lost race costs a
round trip and, under contention, a few more). Writers in other processes still race; the
conditional puts settle those. The gate is not what makes appends correct, only cheap.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Gate:
    """An async mutex whose waiters may sit on different event loops (threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = False
        self._waiters: deque[concurrent.futures.Future[None]] = deque()
        self.users = 0  # holders plus waiters, so idle gates can be dropped

    async def acquire(self) -> None:
        with self._lock:
            if not self._busy:
                self._busy = True
                return
            turn: concurrent.futures.Future[None] = concurrent.futures.Future()
            self._waiters.append(turn)
        try:
            await asyncio.wrap_future(turn)
        except asyncio.CancelledError:
            if not turn.cancel():  # the gate was already handed to us: pass it on
                turn.result()
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                turn = self._waiters.popleft()
                if turn.set_running_or_notify_cancel():
                    turn.set_result(None)
                    return
            self._busy = False


class Gates:
    """One `Gate` per key, created on demand and dropped when nobody uses it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[str, Gate] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        with self._lock:
            gate = self._gates.setdefault(key, Gate())
            gate.users += 1
        try:
            await gate.acquire()
            try:
                yield
            finally:
                gate.release()
        finally:
            with self._lock:
                gate.users -= 1
                if gate.users == 0:
                    del self._gates[key]
