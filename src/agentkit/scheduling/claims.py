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

A `started` claim names its `attempt` (Lambda's request id). Lambda retries an
asynchronous invocation with the same request id, and only after the attempt ended, so a
delivery whose attempt matches the claim's is the retry of an attempt that died without a
word (a crash, a timeout): it takes the claim over at once instead of waiting for it to
lapse (which would outlast Lambda's retries and lose the firing). `ran_since` lets the
caller say the dead attempt got far enough that running again would repeat it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentkit.scheduling.schedules import ScheduleHandlerError

if TYPE_CHECKING:
    from agentkit.store.base import Claim, ClaimStore

__all__ = ["DONE_TTL", "run_claimed"]

log = logging.getLogger("agentkit.schedules")

DONE_TTL = 7 * 86400.0  # how long a finished firing is remembered (Scheduler retries < 1 day)


async def run_claimed(
    store: ClaimStore,
    key: str,
    work: Callable[[], Awaitable[dict[str, Any]]],
    *,
    timeout: float,
    attempt: str | None = None,
    ran_since: Callable[[float], Awaitable[bool]] | None = None,
) -> dict[str, Any]:
    """Run `work` unless `key` was claimed already; see the module docstring for states."""
    if not await store.claim(key, timeout):
        claim = await store.get_claim(key)
        state = claim.state if claim is not None else "started"
        started_at = _retried_attempt(claim, attempt)
        if started_at is None:
            log.info("duplicate delivery of %s ignored (%s)", key, state)
            return {"ok": True, "duplicate": True, "claim": state}
        if ran_since is not None and await ran_since(started_at):
            log.warning("%s: the attempt that died had delivered it; not run again", key)
            await _settle(store, key, "done", "delivered by an attempt that died")
            return {"ok": True, "duplicate": True, "claim": "done"}
        log.warning("%s: its attempt died before it ran; this retry runs it", key)
    if attempt is not None:
        mark = json.dumps({"attempt": attempt, "startedAt": time.time()})
        await store.settle_claim(key, "started", timeout, detail=mark)
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


def _retried_attempt(claim: Claim | None, attempt: str | None) -> float | None:
    """When `claim` is a started claim of this same `attempt`: when it started."""
    if claim is None or attempt is None or claim.state != "started" or not claim.detail:
        return None
    try:
        mark = json.loads(claim.detail)
    except ValueError:
        return None
    if not isinstance(mark, dict) or mark.get("attempt") != attempt:
        return None
    started = mark.get("startedAt")
    return float(started) if isinstance(started, int | float) else 0.0


async def _settle(store: ClaimStore, key: str, state: str, detail: str | None) -> None:
    # The work ran: failing here must not make a retry run it again. The started claim
    # still turns retries away until it lapses.
    try:
        await store.settle_claim(key, state, DONE_TTL, detail=detail)
    except Exception:
        log.exception("%s ran, but its claim could not be marked %s", key, state)
