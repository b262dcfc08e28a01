"""A follow-up with an Idempotency-Key whose process died after it kept its answer and
rotated the token, but before its message was recorded: a retry is turned away while the
first attempt may still be running, and afterwards runs afresh with the caller's token.

The state the crash leaves (the kept answer, the rotated token, no message) is made here
step by step, as the first attempt made it; the kill itself is tested over HTTP in
tests/server/test_idempotency_crash.py."""

from __future__ import annotations

import asyncio

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
from agentkit.engine.on_busy import OnBusy
from agentkit.engine.ports import new_turn_id
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.sealed import seal, sealing_key
from agentkit.engine.service import Accepted
from agentkit.errors import Conflict
from agentkit.models.scripted import Step
from agentkit.sessions import SessionRecord, hash_token, new_http_token, new_session_id
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


def answered(accepted: Accepted) -> Answer:
    return Answer(
        200,
        {
            "sessionId": accepted.session_id,
            "turnId": accepted.turn_id,
            "token": accepted.continuation_token,
        },
    )


async def start_keyed(rt: AgentRuntime, *, cut_off: bool = False) -> tuple[Answer, bool]:
    """`POST /v1/session` with key `KEY`; `cut_off`: the process ends right after the
    session and its message are recorded, before the answer is kept as done."""

    async def work() -> Answer:
        accepted = await rt.start_session("open a ticket", principal=ALICE)
        if cut_off:
            raise asyncio.CancelledError  # as the loop's end cuts a task off
        return answered(accepted)

    assert isinstance(rt.store, ClaimStore)
    return await run_once(
        rt.store,
        principal_id=ALICE.id,
        key=KEY,
        request_fingerprint="fp-start",
        run=work,
        shape=answered,
    )


async def sessions_with(rt: AgentRuntime, message: str) -> list[str]:
    found = []
    for record in (await rt.store.list_sessions(ALICE.id, limit=100)).items:
        events = await rt.store.read(record.id)
        if [e.data["message"] for e in events if e.type == "message.received"] == [message]:
            found.append(record.id)
    return found


async def test_a_new_session_cut_off_before_its_answer_was_kept_is_replayed(
    env: Env, store: Store | None
) -> None:
    rt = env.runtime([Step.text("on it"), Step.text("more")], store=store)
    with pytest.raises(asyncio.CancelledError):
        await start_keyed(rt, cut_off=True)
    await settle(rt)
    [sid] = await sessions_with(rt, "open a ticket")
    answer, replayed = await start_keyed(rt)
    assert replayed
    assert answer.body["sessionId"] == sid
    events = await rt.store.read(sid)
    [received] = [e for e in events if e.type == "message.received"]
    assert answer.body["turnId"] == received.turn_id
    assert await sessions_with(rt, "open a ticket") == [sid]  # no second session
    # The replayed token is the session's live one.
    onward = await rt.follow_up(sid, answer.body["token"], "more", principal=ALICE)
    assert onward.session_id == sid


async def died_before_creating(
    env: Env, store: Store | None, *, created: bool = False
) -> tuple[AgentRuntime, str]:
    """A new session (key `KEY`) whose process died after keeping its answer, before the
    session was created (`created`: after it was created, before its first events)."""
    rt = env.runtime([Step.text("on it")], store=store)
    assert isinstance(rt.store, ClaimStore)
    stored = record_key(ALICE.id, KEY)
    assert await rt.store.claim(stored, IN_FLIGHT_TTL)
    token, sid = new_http_token(), new_session_id()
    sealed = seal(sealing_key("idempotent answer", ALICE.id, KEY), '{"status":200,"body":{}}')
    accepted = Accepted(sid, token, new_turn_id())
    detail = prepared_answer.prepared_detail("fp-start", sealed, accepted, hash_token(token), None)
    await rt.store.settle_claim(stored, prepared_answer.PREPARED, REPLAY_TTL, detail=detail)
    if created:
        record = SessionRecord(id=sid, principal=ALICE.id, token_hash=hash_token(token))
        await rt.store.create_session(record)
    return rt, sid


@pytest.mark.parametrize("created", [False, True], ids=["not-created", "created-empty"])
async def test_a_new_session_that_died_before_its_message_is_in_use_then_started_afresh(
    env: Env, store: Store | None, monkeypatch: pytest.MonkeyPatch, created: bool
) -> None:
    rt, never = await died_before_creating(env, store, created=created)
    with pytest.raises(IdempotencyKeyInUse) as busy:
        await start_keyed(rt)
    assert busy.value.headers["retry-after"]
    monkeypatch.setattr(prepared_answer, "ABANDONED_AFTER", 0.0)
    answer, replayed = await start_keyed(rt)
    assert not replayed and answer.body["sessionId"] != never
    await settle(rt)
    assert await sessions_with(rt, "open a ticket") == [answer.body["sessionId"]]
    assert await rt.store.get_session(never) is None  # an empty one left behind is gone
    listed = [s.id for s in (await rt.store.list_sessions(ALICE.id, limit=100)).items]
    assert listed == [answer.body["sessionId"]]


class Held:
    """A dispatcher that keeps turns until the test runs them: the session stays busy."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.turns.append((session_id, turn_id))


@pytest.mark.parametrize(
    ("on_busy", "busy"), [("queue", True), ("queue", False), ("reject", False)]
)
async def test_a_queued_or_rejectable_follow_up_cut_off_after_rotating_is_replayed(
    env: Env, store: Store | None, on_busy: OnBusy, busy: bool
) -> None:
    # Cut off after its message was recorded (queued behind a busy turn, or accepted as
    # the next turn) and the token rotated, before its answer was kept as done.
    held = Held()
    rt = env.runtime(
        [Step.text("hi"), Step.text("again"), Step.text("more")],
        store=store,
        **({"dispatcher": held} if busy else {}),
    )
    first = await rt.start_session("hello", principal=ALICE)
    if not busy:
        await settle(rt)
    sid, old = first.session_id, first.continuation_token

    async def work(cut_off: bool) -> Answer:
        accepted = await rt.follow_up(sid, old, "again?", principal=ALICE, on_busy=on_busy)
        if cut_off:
            raise asyncio.CancelledError  # as the loop's end cuts a task off
        return answered(accepted)

    async def send(cut_off: bool = False) -> tuple[Answer, bool]:
        assert isinstance(rt.store, ClaimStore)
        return await run_once(
            rt.store,
            principal_id=ALICE.id,
            key=KEY,
            request_fingerprint=f"fp-{on_busy}",
            run=lambda: work(cut_off),
            shape=answered,
        )

    with pytest.raises(asyncio.CancelledError):
        await send(cut_off=True)
    answer, replayed = await send()
    assert replayed and answer.body["sessionId"] == sid
    assert answer.body["token"] != old
    if busy:  # the first turn runs now, and its end drains the queued message
        await rt.run_turn(*held.turns.pop(0))
        assert held.turns == [(sid, answer.body["turnId"])]
        await rt.run_turn(*held.turns.pop(0))
    else:
        await settle(rt)
    events = await rt.store.read(sid)
    received = [e for e in events if e.type == "message.received"]
    assert [e.data["message"] for e in received] == ["hello", "again?"]
    # The replay names the turn the message became (a queued one keeps its queue id).
    assert received[-1].turn_id == answer.body["turnId"]
    if not busy:
        onward = await rt.follow_up(sid, answer.body["token"], "more", principal=ALICE)
        assert onward.session_id == sid
