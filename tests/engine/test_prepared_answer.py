"""A follow-up with an Idempotency-Key whose process died after it kept its answer and
rotated the token, but before its message was recorded: a retry is turned away while the
first attempt may still be running, and afterwards runs afresh with the caller's token.

The state the crash leaves (the kept answer, the rotated token, no message) is made here
step by step, as the first attempt made it; the kill itself is tested over HTTP in
tests/server/test_idempotency_crash.py."""

from __future__ import annotations

import pytest

from agentkit.engine import prepared_answer
from agentkit.engine.idempotency import (
    IN_FLIGHT_TTL,
    REPLAY_TTL,
    Answer,
    IdempotencyKeyInUse,
    record_key,
    run_once,
)
from agentkit.engine.ports import new_turn_id
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.sealed import seal, sealing_key
from agentkit.engine.service import Accepted
from agentkit.errors import Conflict
from agentkit.models.scripted import Step
from agentkit.sessions import hash_token, new_http_token
from agentkit.store.base import ClaimStore, Store

from .conftest import ALICE, Env, settle

KEY = "retry-me"


def shape(accepted: Accepted) -> Answer:
    return Answer(200, {"sessionId": accepted.session_id, "token": accepted.continuation_token})


@pytest.fixture(params=["env", "dynamodb"])
def store(request: pytest.FixtureRequest) -> Store | None:
    """The env's own store (memory, files), or DynamoDB on moto."""
    if request.param == "env":
        return None
    made: Store = request.getfixturevalue("dynamodb_store_factory")()
    return made


async def died_after_rotating(env: Env, store: Store | None) -> tuple[AgentRuntime, str, str, str]:
    """A session whose follow-up (key `KEY`) died between the rotation and its message."""
    rt = env.runtime([Step.text("hi"), Step.text("again")], store=store)
    first = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    store = rt.store
    assert isinstance(store, ClaimStore)
    stored = record_key(ALICE.id, KEY)
    token = new_http_token()
    turn = new_turn_id()
    assert await store.claim(stored, IN_FLIGHT_TTL)
    secret = sealing_key("idempotent answer", ALICE.id, KEY)
    sealed = seal(secret, '{"status":200,"body":{}}')
    accepted = Accepted(first.session_id, token, turn)
    old_hash = hash_token(first.continuation_token)
    detail = prepared_answer.prepared_detail("fp", sealed, accepted, hash_token(token), old_hash)
    await store.settle_claim(stored, prepared_answer.PREPARED, REPLAY_TTL, detail=detail)
    assert await store.rotate_token(first.session_id, old_hash, hash_token(token))
    return rt, first.session_id, first.continuation_token, token


async def retry(rt: AgentRuntime, session_id: str, token: str) -> tuple[Answer, bool]:
    async def work() -> Answer:
        accepted = await rt.follow_up(session_id, token, "again?", principal=ALICE)
        return shape(accepted)

    assert isinstance(rt.store, ClaimStore)
    return await run_once(
        rt.store,
        principal_id=ALICE.id,
        key=KEY,
        request_fingerprint="fp",
        run=work,
        shape=shape,
    )


async def test_a_retry_while_the_first_attempt_may_still_run_is_turned_away(
    env: Env, store: Store | None
) -> None:
    rt, sid, old, _new = await died_after_rotating(env, store)
    with pytest.raises(IdempotencyKeyInUse):
        await retry(rt, sid, old)


async def test_once_it_is_known_dead_the_token_is_given_back_and_the_retry_runs(
    env: Env, store: Store | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, sid, old, dead = await died_after_rotating(env, store)
    monkeypatch.setattr(prepared_answer, "ABANDONED_AFTER", 0.0)
    answer, replayed = await retry(rt, sid, old)
    assert not replayed
    await settle(rt)
    events = await rt.store.read(sid)
    messages = [e.data["message"] for e in events if e.type == "message.received"]
    assert messages == ["hello", "again?"]
    fresh = answer.body["token"]
    assert fresh not in (old, dead)
    with pytest.raises(Conflict):  # the token the dead attempt chose never became usable
        await rt.follow_up(sid, dead, "x", principal=ALICE)
    # A second retry replays the fresh answer.
    again, replayed = await retry(rt, sid, old)
    assert replayed and again.body["token"] == fresh
