"""Keeping a session's turn lease while its holder works: renewed every third of its TTL,
retried through store hiccups, given up only once definitely lost."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("agentkit.engine.running")


class LeaseStore(Protocol):
    """The one store operation lease keeping needs."""

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool: ...


class LeaseKeeper:
    """Keeps a lease renewed for as long as the holder works (`keep_lease`), from a third
    of its TTL on.

    Most turns end well before their first renewal is due, so no task is made until then:
    a timer handle starts the renewal, and `stop` cancels whichever of the two exists.
    `on_lost` runs once the lease is definitely lost (another holder has it, or it ran out).
    """

    def __init__(
        self,
        store: LeaseStore,
        session_id: str,
        holder: str,
        ttl: float,
        on_lost: Callable[[], None],
    ) -> None:
        self._store, self._session_id, self._holder = store, session_id, holder
        self._on_lost = on_lost
        self._ttl = ttl
        self._acquired = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(self._ttl / 3, self._start)

    def _start(self) -> None:
        self._task = asyncio.ensure_future(self._keep())

    async def _keep(self) -> None:
        store, session_id, holder = self._store, self._session_id, self._holder
        if await _renew_once(store, session_id, holder, self._ttl, self._acquired):
            await keep_lease(store, session_id, holder, self._ttl)
        self._on_lost()

    async def stop(self) -> None:
        """Stop renewing (the lease itself is released by the caller)."""
        self._timer.cancel()
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def keep_lease(store: LeaseStore, session_id: str, holder: str, ttl: float) -> None:
    """Renew the session's lease every third of its TTL; return once it is lost.

    A renewal that fails (a throttled write, a network blip) is retried with backoff
    while the lease is still ours; only a definite loss (the store says another holder
    has it, or it ran out) ends the renewal."""
    renewed = time.monotonic()
    while True:
        await asyncio.sleep(ttl / 3)
        if not await _renew_once(store, session_id, holder, ttl, renewed):
            return
        renewed = time.monotonic()


async def _renew_once(
    store: LeaseStore, session_id: str, holder: str, ttl: float, renewed: float
) -> bool:
    """Renew once, retrying failures while the lease (last renewed at `renewed`,
    monotonic) may still be ours; False once it is lost."""
    delay = min(0.05, ttl / 30)
    while True:
        try:
            return await store.renew_lease(session_id, holder, ttl)
        except Exception as exc:
            left = renewed + ttl - time.monotonic()
            if left <= delay:
                log.warning("lease renewal of %s kept failing: %s", session_id, exc)
                return False
            log.info("lease renewal of %s failed (%s); retrying", session_id, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, ttl / 6)
