"""Accepting a message into a session: a new session, a follow-up (by token or by a
channel's key), a trusted delivery. The daily limit, the token rotation, settling a busy
turn, recording the message and dispatching its turn, the same for every surface.
"""

from __future__ import annotations

import hmac
import shutil
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import Protocol

from agentkit.authoring.ab import AbDefinition
from agentkit.engine import prepared_answer
from agentkit.engine.arms import enroll
from agentkit.engine.binding import agent_bound
from agentkit.engine.on_busy import OnBusy, accept_when_idle
from agentkit.engine.pausing import refuse_message, refuse_switched
from agentkit.engine.ports import SessionPorts, new_turn_id
from agentkit.engine.service import Accepted
from agentkit.engine.session_reads import SessionReads, find_by_key
from agentkit.engine.settling import end_undispatched, give_back_token, settle
from agentkit.engine.tools.workspace import check_files, check_fits
from agentkit.errors import BadRequest, Conflict, Forbidden, InvalidId, NotFound
from agentkit.events import MessageReceived, SessionStarted, draft
from agentkit.project.digest import manifest_digest
from agentkit.project.manifest import Manifest
from agentkit.sessions import (
    Mode,
    Principal,
    SessionRecord,
    hash_token,
    new_http_token,
    new_session_id,
    token_matches,
    validate_session_id,
)
from agentkit.store.base import Store

# Turns the agent starts itself, never counted against a caller's daily limit.
AGENT_OWN_SOURCES = frozenset({"schedule", "reminder", "cli"})


class Inbox(Protocol):
    """What accepting a message takes from the runtime."""

    @property
    def ports(self) -> SessionPorts: ...

    @property
    def manifest(self) -> Manifest: ...

    @property
    def experiments(self) -> dict[str, AbDefinition]: ...

    @property
    def ab_paused(self) -> Callable[[], Awaitable[Mapping[str, Collection[str]]]]: ...

    @property
    def settle_timeout(self) -> float: ...

    def workspace(self, session_id: str) -> Path: ...

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None: ...

    @property
    def reads(self) -> SessionReads: ...


async def start_session(
    rt: Inbox,
    message: str,
    *,
    principal: Principal,
    channel_id: str = "http",
    mode: Mode = "chat",
    continuation_key: str | None = None,
    workspace_files: Mapping[str, str] | None = None,
    source: str = "http",
) -> Accepted:
    """Create a session, record `session.started` and the message, dispatch the turn."""
    # With an Idempotency-Key the id, token and turn are chosen, and the answer kept, first.
    intent = prepared_answer.take()
    files = check_files(workspace_files)
    await refuse_switched(rt.ports.switch)
    await check_daily(rt.manifest, rt.ports.store, principal, source)
    session_id = intent.session_id if intent is not None else new_session_id()
    if files:
        # Written before the session exists, so files that cannot be written leave no
        # session behind (and no half-written workspace).
        try:
            rt.prepare_workspace(session_id, files)
        except BadRequest:
            shutil.rmtree(rt.workspace(session_id), ignore_errors=True)
            raise
    token = intent.token if intent is not None else new_http_token()
    turn_id = intent.turn_id if intent is not None else new_turn_id()
    record = SessionRecord(
        id=session_id,
        channel_id=channel_id,
        mode=mode,
        principal=principal.id,
        token_hash=hash_token(token),
        continuation_key=continuation_key,
    )
    if intent is not None:
        await intent.keep(Accepted(session_id, token, turn_id), None)
    await rt.ports.store.create_session(record)
    rt.ports.remember(record)
    started = SessionStarted(
        channel_id=channel_id,
        mode=mode,
        principal=principal.id,
        agent=rt.manifest.agent.slug,
        manifest_digest=manifest_digest(rt.manifest),
    )
    payload = received(message, principal, source, files)
    experiments = rt.experiments
    paused = await rt.ab_paused() if experiments else {}
    arms = enroll(experiments, record.id, principal.id, paused)
    bound = agent_bound(rt.manifest, record.id)
    await rt.ports.record(
        record,
        [
            draft(started),
            *(draft(a) for a in arms),
            draft(payload, turn_id=turn_id),
            draft(bound),
        ],
    )
    await dispatch_or_end(rt.ports, record, turn_id)
    return Accepted(record.id, token, turn_id)


async def follow_up(
    rt: Inbox,
    session_id: str,
    continuation_token: str,
    message: str,
    *,
    principal: Principal,
    workspace_files: Mapping[str, str] | None = None,
    source: str = "http",
    on_busy: OnBusy = "interrupt",
) -> Accepted:
    """Continue a chat session; a busy turn is interrupted first (bounded wait), or
    the message is queued behind it or rejected (`on_busy`, see `engine.on_busy`)."""
    taken = prepared_answer.take()
    record = await rt.reads.owned(session_id, principal)
    if record.mode == "task":
        raise Conflict("task sessions do not accept follow-ups", code="not_followable")
    if is_channel_key(record, continuation_token):
        # A channel's sessions are continued by the channel's own key (never rotated).
        return await follow_up_by_key(
            rt,
            record.channel_id,
            continuation_token,
            message,
            principal=principal,
            source=source,
            on_busy=on_busy,
        )
    if not token_matches(continuation_token, record.token_hash):
        raise Conflict("the continuation token is stale or wrong", code="stale_token")
    events = await refuse_message(rt.ports, record.id)
    files = check_files(workspace_files)
    await check_daily(rt.manifest, rt.ports.store, principal, source)
    # Clashes with the workspace as it is are refused before the running turn is
    # interrupted for nothing (checked again, after seeding, when written).
    if files:
        check_fits(rt.workspace(record.id), files)
    old_hash = record.token_hash
    if old_hash is None:
        raise Conflict("the continuation token is stale or wrong", code="stale_token")
    # With an Idempotency-Key the token and turn are chosen, and the answer kept, first.
    intent = taken
    token = intent.token if intent is not None else new_http_token()
    new_hash = hash_token(token)
    if on_busy != "interrupt":
        turn_id = await accept_rotating(
            rt.ports,
            record,
            old_hash,
            new_hash,
            message,
            principal,
            source,
            on_busy,
            lambda: rt.prepare_workspace(record.id, files) if files else None,
            intent,
        )
        return Accepted(record.id, token, turn_id)
    # Only while the presented token is still current may this request interrupt: once
    # a concurrent follow-up with the same token has been accepted, the running turn is
    # that one's, and this request is the loser.
    await settle(rt.ports, record, rt.settle_timeout, token_hash=old_hash, events=events)
    if intent is not None:
        await intent.keep(Accepted(record.id, token, intent.turn_id), old_hash)
    if not await rt.ports.store.rotate_token(record.id, old_hash, new_hash):
        raise Conflict("another follow-up was accepted first", code="session_busy")
    try:
        if files:
            rt.prepare_workspace(record.id, files)
        chosen = intent.turn_id if intent is not None else None
        turn_id = await accept(rt.ports, record, message, principal, source, files, chosen)
    except BaseException:
        # The caller never learns the new token: give the old one back so it can retry
        # with it (only this request knows the new hash, so nobody else has used it).
        await give_back_token(rt.ports.store, record.id, new_hash, old_hash)
        raise
    return Accepted(record.id, token, turn_id)


async def follow_up_by_key(
    rt: Inbox,
    channel_id: str,
    continuation_key: str,
    message: str,
    *,
    principal: Principal,
    source: str = "channel",
    on_busy: OnBusy = "interrupt",
) -> Accepted:
    """Continue the session a channel key points at (reminders, schedules and channels).

    For the HTTP channel the key is the session's conversation key, `session:<id>` (see
    `conversation_key`): it names the session but is never its continuation token.
    """
    record = await find_by_key(rt.ports.store, channel_id, continuation_key)
    if record is None:
        raise NotFound(
            f"no session for {channel_id} key {continuation_key!r}", code="session_not_found"
        )
    if not principal.owns(record):
        raise Forbidden("not the owner of this session")
    if record.mode == "task":
        raise Conflict("task sessions do not accept follow-ups", code="not_followable")
    events = await refuse_message(rt.ports, record.id)
    # The limit a caller's first message met holds for its later ones (an AG-UI thread's
    # next run, a chat's next message), whatever surface names the session by key.
    await check_daily(rt.manifest, rt.ports.store, principal, source)
    if on_busy != "interrupt":
        turn_id = await accept_when_idle(rt.ports, record, message, principal, source, on_busy)
        await rt.ports.store.touch_session(record.id)
        return Accepted(record.id, continuation_key, turn_id)
    await settle(rt.ports, record, rt.settle_timeout, events=events)
    await rt.ports.store.touch_session(record.id)
    turn_id = await accept(rt.ports, record, message, principal, source, {})
    return Accepted(record.id, continuation_key, turn_id)


async def deliver(
    rt: Inbox, session_id: str, message: str, *, source: str = "reminder"
) -> Accepted:
    """Send a message into a session by id, as its owner, with no token (trusted callers:
    reminders). Same rules as a follow-up otherwise; the HTTP token is not rotated."""
    try:
        record = await rt.ports.store.get_session(validate_session_id(session_id))
    except InvalidId:
        record = None
    if record is None:
        raise NotFound(f"no session {session_id[:80]!r}", code="session_not_found")
    if record.mode == "task":
        raise Conflict("task sessions do not accept follow-ups", code="not_followable")
    events = await refuse_message(rt.ports, record.id)
    await settle(rt.ports, record, rt.settle_timeout, events=events)
    await rt.ports.store.touch_session(record.id)
    owner = Principal(record.principal or "system")
    turn_id = await accept(rt.ports, record, message, owner, source, {})
    return Accepted(record.id, record.continuation_key or "", turn_id)


async def check_daily(manifest: Manifest, store: Store, principal: Principal, source: str) -> None:
    """The per-principal daily limit of a caller, whatever the surface it came in by
    (HTTP, MCP, ...); 429 when spent. Schedules, reminders, the CLI and channels' own
    principals are the agent's own traffic, not a caller's."""
    if "budget" not in manifest.agent.options:
        return
    if source in AGENT_OWN_SOURCES or principal.id.startswith("channel:"):
        return
    from agentkit.costs import parse_budget
    from agentkit.engine.folds.daily_use import check_daily as check_daily_use

    budget = parse_budget(manifest.agent.options["budget"])
    await check_daily_use(store, budget, principal.id)


def received(
    message: str, principal: Principal, source: str, files: dict[str, str]
) -> MessageReceived:
    """The `message.received` payload of an accepted message."""
    return MessageReceived(
        message=message,
        principal=principal.id,
        source=source,
        workspace_files=sorted(files) or None,
    )


async def accept(
    ports: SessionPorts,
    record: SessionRecord,
    message: str,
    principal: Principal,
    source: str,
    files: dict[str, str],
    turn_id: str | None = None,
) -> str:
    """Record the message and dispatch its turn (`turn_id`, else a new one); `files` are
    already written."""
    # A stop asked for before this message was meant for an earlier turn; one asked for
    # from now on is meant for this one.
    ports.turns.forget_stop(record.id)
    await ports.store.set_interrupt(record.id, False)
    turn_id = turn_id or new_turn_id()
    await ports.record(
        record, [draft(received(message, principal, source, files), turn_id=turn_id)]
    )
    await dispatch_or_end(ports, record, turn_id)
    return turn_id


async def dispatch_or_end(ports: SessionPorts, record: SessionRecord, turn_id: str) -> None:
    """Dispatch the turn; when that fails, end it (the caller gets the error, and a turn it
    cannot follow must not run later on its behalf)."""
    try:
        await ports.dispatcher.dispatch(record.id, turn_id)
    except Exception as exc:
        # The message is recorded but nothing will run its turn: end it now, so the
        # session is not left running (the sweeper re-dispatches it if this fails too).
        await end_undispatched(ports, record, turn_id, exc)
        raise


async def accept_rotating(
    ports: SessionPorts,
    record: SessionRecord,
    old_hash: str,
    new_hash: str,
    message: str,
    principal: Principal,
    source: str,
    on_busy: OnBusy,
    before_recording: Callable[[], None],
    intent: prepared_answer.Intent | None = None,
) -> str:
    """An HTTP follow-up under `queue` or `reject`: the token rotates only once the
    message is sure to be kept (then `before_recording` writes its files). With `intent`
    (an Idempotency-Key), its answer is kept just before the rotation, and the message
    (queued or accepted) takes the intent's turn id."""

    async def rotate() -> None:
        if intent is not None:
            await intent.keep(Accepted(record.id, intent.token, intent.turn_id), old_hash)
        if not await ports.store.rotate_token(record.id, old_hash, new_hash):
            raise Conflict("another follow-up was accepted first", code="session_busy")
        before_recording()

    return await accept_when_idle(
        ports,
        record,
        message,
        principal,
        source,
        on_busy,
        claim=rotate,
        turn_id=None if intent is None else intent.turn_id,
    )


def is_channel_key(record: SessionRecord, token: str) -> bool:
    """Whether `token` is the channel's own key of the session (never rotated)."""
    return (
        record.channel_id != "http"
        and record.continuation_key is not None
        and hmac.compare_digest(
            record.continuation_key.encode("utf-8", "surrogatepass"),
            token.encode("utf-8", "surrogatepass"),
        )
    )


__all__ = [
    "AGENT_OWN_SOURCES",
    "accept",
    "accept_rotating",
    "check_daily",
    "dispatch_or_end",
    "is_channel_key",
    "received",
]
