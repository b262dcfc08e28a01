"""Run a delivered firing once, without losing it to a failed attempt.

EventBridge Scheduler and Lambda deliver at least once, so a firing is claimed in the
store before it runs. The claim has states:

- `started`: an attempt is running. It lapses after `timeout` seconds (the attempt's time
  limit plus a margin), so when the attempt dies without a word (a Lambda timeout or
  out-of-memory), the next retry proceeds;
- `done`: the firing ran; any later delivery of it does nothing;
- `failed`: the schedule's own handler raised. It ran (perhaps part-way), so it is not
  run again; the error is kept on the claim and logged;
- released: an error of the store, the service or the delivery path; the claim is removed
  and the error raised, so the retry Scheduler or Lambda makes runs the firing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentkit.scheduling.schedules import ScheduleHandlerError

if TYPE_CHECKING:
    from agentkit.store.base import Claim

__all__ = ["DONE_TTL", "ClaimStore", "run_claimed"]

log = logging.getLogger("agentkit.schedules")

DONE_TTL = 7 * 86400.0  # how long a finished firing is remembered (Scheduler retries < 1 day)


class ClaimStore(Protocol):
    async def claim(self, key: str, ttl: float) -> bool: ...
    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None: ...
    async def release_claim(self, key: str) -> None: ...
    async def get_claim(self, key: str) -> Claim | None: ...


async def run_claimed(
    store: ClaimStore,
    key: str,
    work: Callable[[], Awaitable[dict[str, Any]]],
    *,
    timeout: float,
) -> dict[str, Any]:
    """Run `work` unless `key` was claimed already; see the module docstring for states."""
    if not await store.claim(key, timeout):
        claim = await store.get_claim(key)
        state = claim.state if claim is not None else "started"
        log.info("duplicate delivery of %s ignored (%s)", key, state)
        return {"ok": True, "duplicate": True, "claim": state}
    try:
        result = await work()
    except ScheduleHandlerError as exc:
        message = exc.message or exc.code
        log.error("%s: %s", key, message, exc_info=exc.__cause__)
        await _settle(store, key, "failed", message)
        return {"ok": False, "error": exc.code, "message": message}
    except BaseException:
        # Not the handler's fault: let the retry run it. If even the release fails, the
        # started claim lapses after `timeout` and a later retry proceeds.
        with contextlib.suppress(Exception):
            await store.release_claim(key)
        raise
    await _settle(store, key, "done", None)
    return result


async def _settle(store: ClaimStore, key: str, state: str, detail: str | None) -> None:
    # The work ran: failing here must not make a retry run it again. The started claim
    # still turns retries away until it lapses.
    try:
        await store.settle_claim(key, state, DONE_TTL, detail=detail)
    except Exception:
        log.exception("%s ran, but its claim could not be marked %s", key, state)
