"""Idempotent writes: a request retried with the same `Idempotency-Key` gets its first
answer back, and nothing is recorded twice.

A caller whose response was lost (a dropped connection, a client timeout, API Gateway's
29 s limit) holds a continuation token the server already rotated. Retrying the same
request with the same key returns the original answer, new token included, without
running it again, so the caller can carry on.

The rules live here once, for every store; a store only provides put-if-absent
(`claim`), overwrite (`settle_claim`), get (`get_claim`) and delete (`release_claim`),
each with a TTL. One record per principal and key:

- `started`, with the request's fingerprint, while the first attempt runs. It lapses
  after `IN_FLIGHT_TTL`, so a retry after a crash mid-request runs it afresh;
- `done`, with the fingerprint and the answer, for `REPLAY_TTL` (24 h). The answer carries
  a live continuation token, so it is sealed with a key derived from the principal and the
  caller's key (`engine.sealed`); the store keeps the key only as a hash;
- removed when the request failed with an error (nothing was accepted, so a retry may run
  it again); left as it is when the attempt was cut off (the server stopped past its drain
  deadline, `drain`), since part of it may have run.

A retry turned away while the first attempt runs gets `409 idempotency_key_in_use` with
`Retry-After`. A server that stops waits for the attempts still running here (`drain`,
called by the app's lifespan before the stores close), so their answers are kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentkit.engine import prepared_answer
from agentkit.engine.crash_points import crash_point
from agentkit.engine.ports import new_turn_id
from agentkit.engine.prepared_answer import SessionReader
from agentkit.engine.sealed import SealBroken, open_sealed, seal, sealing_key
from agentkit.engine.service import Accepted
from agentkit.errors import BadRequest, Conflict, HttpError
from agentkit.sessions import hash_token, new_http_token, new_session_id
from agentkit.store.base import Claim, ClaimStore

__all__ = [
    "IN_FLIGHT_TTL",
    "IN_FLIGHT_WAIT",
    "IN_USE_RETRY_AFTER",
    "MAX_KEY_CHARS",
    "MAX_REPLAY_CHARS",
    "REPLAY_TTL",
    "WAIT_ENV",
    "Answer",
    "ClaimStore",
    "IdempotencyKeyInUse",
    "IdempotencyKeyReused",
    "IdempotencyResponseTooLarge",
    "InvalidIdempotencyKey",
    "drain",
    "fingerprint",
    "in_flight_wait",
    "run_once",
    "validate_header_key",
]

log = logging.getLogger("agentkit.idempotency")

REPLAY_TTL = 24 * 3600.0
# Longer than any write takes to answer (a direct tool call included), short enough that a
# retry after a crash mid-request is not turned away for long.
IN_FLIGHT_TTL = 300.0
MAX_KEY_CHARS = 255
# A recorded answer, sealed (a third larger), stays inside a claim's detail on DynamoDB
# (100 000 characters) and well inside one item (400 KB).
MAX_REPLAY_CHARS = 64_000
# How long a retry waits for a first attempt still running in this process before it is
# answered `409 idempotency_key_in_use`: inside API Gateway's 29 s. `WAIT_ENV` (seconds)
# sets another, for a server behind a gateway with a shorter limit.
IN_FLIGHT_WAIT = 20.0
WAIT_ENV = "AGENTKIT_IDEMPOTENCY_WAIT"
# The `Retry-After` (seconds) of a `409 idempotency_key_in_use` whose first attempt is
# running: the retry then waits for it again, so a short pause is enough.
IN_USE_RETRY_AFTER = 2

# The first attempts running in this process, by record key. Each runs in its own task,
# shielded from its caller: a client that disconnects (its request task cancelled) does
# not cut the write short, so the answer is kept for the retry.
_running: dict[str, asyncio.Task[Answer]] = {}


class IdempotencyKeyReused(HttpError):
    """The key was used before for a different request."""

    status = 422
    code = "idempotency_key_reused"


class InvalidIdempotencyKey(BadRequest):
    """The header is empty, too long, or not visible ASCII."""

    code = "invalid_idempotency_key"


class IdempotencyKeyInUse(Conflict):
    """The first request with this key is still running: retry after `retry_after`
    seconds (the `Retry-After` header, and `retryAfter` in the body)."""

    code = "idempotency_key_in_use"

    def __init__(
        self,
        message: str = "a request with this Idempotency-Key is still running",
        *,
        retry_after: float = IN_USE_RETRY_AFTER,
    ) -> None:
        seconds = max(1, math.ceil(retry_after))
        super().__init__(message, retryAfter=seconds)
        self.retry_after = seconds
        self.headers = {"retry-after": str(seconds)}


def in_flight_wait() -> float:
    """How long a retry waits for a first attempt running here (`WAIT_ENV`, else
    `IN_FLIGHT_WAIT`)."""
    raw = os.environ.get(WAIT_ENV)
    if raw is None:
        return IN_FLIGHT_WAIT
    try:
        return max(0.0, float(raw))
    except ValueError:
        return IN_FLIGHT_WAIT


class IdempotencyResponseTooLarge(Conflict):
    """The request ran, but its answer was too large to keep for a replay."""

    code = "idempotency_response_too_large"


@dataclass(frozen=True, slots=True)
class Answer:
    """What a write answered: an HTTP status and a JSON body."""

    status: int
    body: Any


def validate_header_key(key: str) -> str:
    """The key unchanged: 1 to 255 visible ASCII characters, else a 400."""
    if not 0 < len(key) <= MAX_KEY_CHARS or not all(33 <= ord(c) <= 126 for c in key):
        raise InvalidIdempotencyKey(
            f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} visible ASCII characters"
        )
    return key


def fingerprint(route: str, params: dict[str, str], body: Any) -> str:
    """A digest of what a request asks for: its route, path parameters and JSON body
    (key order ignored). Two requests with one key must agree on it."""
    canonical = json.dumps(
        {"route": route, "params": params, "body": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def record_key(principal_id: str, key: str) -> str:
    """The store key of one principal's idempotency key: another principal's same key is
    another record."""
    owner = hashlib.sha256(principal_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"http-idempotency:{owner}:{key}"


async def run_once(
    store: ClaimStore,
    *,
    principal_id: str,
    key: str,
    request_fingerprint: str,
    run: Callable[[], Awaitable[Answer]],
    shape: Callable[[Accepted], Answer] | None = None,
) -> tuple[Answer, bool]:
    """Run the request once per (principal, key): `(answer, replayed)`.

    A repeat with the same fingerprint gets the recorded answer (`replayed` True) and runs
    nothing; one with another fingerprint gets `IdempotencyKeyReused`. The first attempt
    runs shielded from its caller's cancellation (a client that disconnects), so it ends
    and keeps its answer. A retry while it still runs in this process waits for it (up to
    `IN_FLIGHT_WAIT`) and replays its answer; one while it runs elsewhere, or for longer,
    gets `IdempotencyKeyInUse`. With `shape` (a follow-up or a new session: how its
    `Accepted` is answered), the answer is kept before the token rotates or the session is
    created (`engine.prepared_answer`), so a crash after that still leaves it for the
    retry."""
    stored = record_key(principal_id, validate_header_key(key))
    # The answer holds a live token: it is sealed with a key only the caller can present.
    secret = sealing_key("idempotent answer", principal_id, key)
    for _ in range(3):
        if await store.claim(stored, IN_FLIGHT_TTL):
            if shape is not None:
                run = _prepared_run(store, stored, request_fingerprint, secret, run, shape)
            attempt = _shielded(stored, _run_first(store, stored, request_fingerprint, secret, run))
            return await asyncio.shield(attempt), False
        running = _running.get(stored)
        if running is not None:
            # The first attempt runs here (its caller may be gone): wait for its answer.
            await asyncio.wait({running}, timeout=in_flight_wait())
            if not running.done():
                raise IdempotencyKeyInUse()
        claim = await store.get_claim(stored)
        if claim is None:
            continue  # it lapsed or was released between the two reads: claim again
        if claim.state == prepared_answer.PREPARED and isinstance(store, SessionReader):
            kept = await _settle_prepared(store, store, stored, claim, request_fingerprint)
            if kept is None:
                continue  # it died before the message: the token is back, run it afresh
            claim = kept
        return _replay(claim, request_fingerprint, secret), True
    raise IdempotencyKeyInUse()


async def drain(timeout: float) -> int:
    """Wait up to `timeout` seconds for the first attempts running in this process, so a
    server that stops lets them finish and keep their answers; how many are still running
    after it (left to the loop's end: their records stay as they are, see `_run_first`)."""
    running = set(_running.values())
    if not running:
        return 0
    log.warning(
        "waiting up to %g s for %d keyed write(s) still running to finish",
        timeout,
        len(running),
    )
    _done, pending = await asyncio.wait(running, timeout=timeout)
    if pending:
        log.warning(
            "%d keyed write(s) still running at shutdown; a retry with the key gets "
            "409 idempotency_key_in_use until the record lapses",
            len(pending),
        )
    return len(pending)


def _shielded(stored: str, first: Awaitable[Answer]) -> asyncio.Task[Answer]:
    """`first` as a task of its own, listed in `_running` until it ends."""
    task: asyncio.Task[Answer] = asyncio.ensure_future(first)
    _running[stored] = task

    def ended(done: asyncio.Task[Answer]) -> None:
        if _running.get(stored) is done:
            del _running[stored]
        if not done.cancelled():
            done.exception()  # its caller may be gone: the outcome is in the record

    task.add_done_callback(ended)
    return task


def _prepared_run(
    store: ClaimStore,
    stored: str,
    request_fingerprint: str,
    secret: bytes,
    run: Callable[[], Awaitable[Answer]],
    shape: Callable[[Accepted], Answer],
) -> Callable[[], Awaitable[Answer]]:
    """`run`, with the answer kept as `prepared` by the follow-up before it rotates."""

    async def keep(accepted: Accepted, old_hash: str | None) -> None:
        answer = shape(accepted)
        sealed = seal(secret, _recorded(answer))
        token_hash = hash_token(accepted.continuation_token)
        detail = prepared_answer.prepared_detail(
            request_fingerprint, sealed, accepted, token_hash, old_hash
        )
        await store.settle_claim(stored, prepared_answer.PREPARED, REPLAY_TTL, detail=detail)

    intent = prepared_answer.Intent(new_http_token(), new_turn_id(), keep, new_session_id())

    async def first() -> Answer:
        answer: Answer = await prepared_answer.run_with(intent, run)
        return answer

    return first


async def _settle_prepared(
    claims: ClaimStore,
    sessions: SessionReader,
    stored: str,
    claim: Claim,
    request_fingerprint: str,
) -> Claim | None:
    """The record of a follow-up whose answer was kept before it rotated the token: `done`
    when its message is recorded, None once it is known to have died before that."""
    try:
        record = json.loads(claim.detail) if claim.detail else {}
    except ValueError:
        record = {}
    if not isinstance(record, dict) or record.get("fingerprint") != request_fingerprint:
        return claim  # answered as any other record is (422, or in use)
    verdict = await prepared_answer.what_happened(sessions, record)
    if verdict == "in_flight":
        raise IdempotencyKeyInUse()
    if verdict == "abandoned":
        await claims.release_claim(stored)
        return None
    detail = json.dumps({"fingerprint": request_fingerprint, "sealed": record.get("sealed")})
    with contextlib.suppress(Exception):  # the answer is replayed either way
        await claims.settle_claim(stored, "done", REPLAY_TTL, detail=detail)
    return dataclasses.replace(claim, state="done", detail=detail)


async def _run_first(
    store: ClaimStore,
    stored: str,
    request_fingerprint: str,
    secret: bytes,
    run: Callable[[], Awaitable[Answer]],
) -> Answer:
    await store.settle_claim(
        stored, "started", IN_FLIGHT_TTL, detail=json.dumps({"fingerprint": request_fingerprint})
    )
    try:
        answer = await run()
    except asyncio.CancelledError:
        # Cut short (only the loop's end cancels it: the server stopped past its drain
        # deadline). It may have done part of its work, so the record stays: `started`
        # lapses after IN_FLIGHT_TTL, `prepared` is settled from the session's log.
        raise
    except BaseException:
        # Refused or failed: nothing was accepted, so a retry with this key may run it.
        with contextlib.suppress(Exception):
            await store.release_claim(stored)
        raise
    crash_point("idempotent-answer-unrecorded")  # the write ran; its answer is not kept yet
    recorded = _recorded(answer)
    if len(recorded) > MAX_REPLAY_CHARS:
        detail = json.dumps({"fingerprint": request_fingerprint, "tooLarge": True})
    else:
        sealed = seal(secret, recorded)
        detail = json.dumps({"fingerprint": request_fingerprint, "sealed": sealed})
    try:
        await store.settle_claim(stored, "done", REPLAY_TTL, detail=detail)
    except Exception:
        # The write happened; the caller gets its answer. A retry meets the started record
        # (409 in use) until it lapses.
        log.exception("a write ran, but its idempotency record could not be kept")
    crash_point("idempotent-answer-unsent")  # the answer is kept; the caller has not got it
    return answer


def _recorded(answer: Answer) -> str:
    return json.dumps(
        {"status": answer.status, "body": answer.body}, separators=(",", ":"), default=str
    )


def _replay(claim: Claim, request_fingerprint: str, secret: bytes) -> Answer:
    try:
        record = json.loads(claim.detail) if claim.detail else {}
    except ValueError:
        record = {}
    if not isinstance(record, dict) or "fingerprint" not in record:
        raise IdempotencyKeyInUse()
    if record["fingerprint"] != request_fingerprint:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used for a different request; use a new key"
        )
    if claim.state != "done":
        raise IdempotencyKeyInUse()
    if record.get("tooLarge"):
        raise IdempotencyResponseTooLarge(
            "the request with this Idempotency-Key ran, but its answer was too large to replay"
        )
    try:
        answer = json.loads(open_sealed(secret, str(record.get("sealed", ""))))
        return Answer(int(answer["status"]), answer.get("body"))
    except (SealBroken, ValueError, KeyError, TypeError):
        # Only the same principal and key reach this record, so it opens; anything else
        # is a damaged record, which must not be answered as if the request never ran.
        raise IdempotencyKeyInUse("the record of this Idempotency-Key is unreadable") from None
