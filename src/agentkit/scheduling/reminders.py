"""Reminders: runtime wakes bound to one conversation (`host.reminders`).

A reminder is durable in the store (`ReminderRecord`) and armed on the `Timer` under
`reminder:<id>`. It fires in one of two forms:

- prompt form: the prompt (plus the `until` condition, so the model knows when the wake is
  no longer wanted) goes into the conversation as a follow-up with `source="reminder"`;
- run form: host code decides per tick (`ReminderTick(fire_count, followup)` in, `"stop"`,
  `"skip"` or `"delivered"` out). Handlers live in memory only, so `start()` after a restart
  disarms such reminders with reason `handler_lost_on_restart`.

Delivery goes through the agent service, so a reminder follows the follow-up rules: a busy
session has its turn interrupted, or the service answers `409 session_busy`. A timer firing
that meets a busy session retries a minute later without counting the tick; a hand dispatch
(`dispatch_reminder`) raises the `Conflict` to its caller.

A tool gets `for_session(...)`, a view narrowed to its session's principal
(`scheduling.scoped`); host code keeps this service. Delivery errors that are not HTTP
answers re-arm the reminder with backoff, and run-handler errors are recorded as such (see
`scheduling._firing`). `ReminderLimits` bounds recurring intervals and reminders per session.

`fire_count` counts the ticks before the current one, so `if tick.fire_count >= 3: stop`
wakes the conversation three times.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import logging
import secrets
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentkit.authoring.contexts import HostServices, SessionInfo
from agentkit.cron.standard import (
    format_instant,
    next_fire,
    parse_duration,
    parse_instant,
    validate_cron,
)
from agentkit.errors import BadRequest, Conflict, Forbidden, InvalidId, NotFound
from agentkit.events import now_iso
from agentkit.reminders import ReminderRecord, ScheduleKind
from agentkit.scheduling._firing import (
    DELIVERY_FAILED,
    HANDLER_FAILED,
    HANDLER_LOST,
    PRINCIPAL_MISMATCH,
    ReminderDelivery,
    ReminderFiring,
    ReminderStore,
    RunHandler,
    reminder_message,
)
from agentkit.scheduling.limits import ReminderLimits, delivery_backoff, shortest_gap
from agentkit.scheduling.scoped import SessionReminders
from agentkit.scheduling.timer import Clock, SystemClock, Timer, reminder_key
from agentkit.sessions import HTTP_CHANNEL, session_id_of_key

if TYPE_CHECKING:
    from agentkit.engine.service import AgentService

__all__ = [
    "DELIVERY_FAILED",
    "HANDLER_FAILED",
    "HANDLER_LOST",
    "PRINCIPAL_MISMATCH",
    "KeepsReminders",
    "ReminderDelivery",
    "ReminderService",
    "reminder_message",
]

log = logging.getLogger("agentkit.reminders")


@runtime_checkable
class KeepsReminders(Protocol):
    """Optional, on a mount's host: its reminders, which the dev routes list and fire by
    hand (without it the list is empty and firing one answers 404)."""

    @property
    def reminders(self) -> ReminderService: ...


def _new_id() -> str:
    return "rem_" + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")


class ReminderService(ReminderFiring):
    """`host.reminders`: create, list, get, cancel and fire reminders.

    `timer` is None when timers are off (`--dev`): reminders are stored but only fire
    through `dispatch_reminder`. `service` may be attached after construction (the runtime
    and the reminders need each other: tools call `host.reminders`).
    """

    def __init__(
        self,
        store: ReminderStore,
        *,
        service: AgentService | None = None,
        timer: Timer | None = None,
        clock: Clock | None = None,
        host: HostServices | None = None,
        limits: ReminderLimits | None = None,
    ) -> None:
        self._store = store
        self.limits = limits or ReminderLimits.from_env()
        self._service = service
        self._timer = timer
        self._clock: Clock = clock or (timer.clock if timer is not None else SystemClock())
        self._host = host
        self._handlers: dict[str, RunHandler] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def attach(
        self, *, service: AgentService | None = None, host: HostServices | None = None
    ) -> None:
        """Late wiring of the agent service and the host services handed to run handlers."""
        if service is not None:
            self._service = service
        if host is not None:
            self._host = host

    @property
    def timers_enabled(self) -> bool:
        return self._timer is not None

    def for_session(self, session: SessionInfo | None) -> SessionReminders:
        """The view handed to a tool running in `session`: its principal's reminders only."""
        principal = session.principal if session is not None else None
        return SessionReminders(self, principal=principal, session=session)

    def for_principal(self, principal: str) -> SessionReminders:
        """The view handed to code acting for `principal` outside a session (schedules)."""
        return SessionReminders(self, principal=principal)

    # -- the public API ------------------------------------------------------------------

    async def create(self, **options: Any) -> ReminderRecord:
        """`host.reminders.create(...)`: the keywords of `create_reminder`.

        Unknown or missing keywords are a `BadRequest`, never a crash in user code.
        """
        try:
            bound = inspect.signature(self.create_reminder).bind(**options)
        except TypeError as exc:
            raise BadRequest(f"invalid reminder options: {exc}") from None
        return await self.create_reminder(*bound.args, **bound.kwargs)

    async def create_reminder(
        self,
        *,
        purpose: str,
        channel_id: str,
        continuation_token: str,
        delay: str | None = None,
        every: str | None = None,
        cron: str | None = None,
        at: datetime | str | None = None,
        prompt: str | None = None,
        until: str | None = None,
        run: RunHandler | None = None,
        session_id: str | None = None,
        principal: str | None = None,
        created_in: str | None = None,
    ) -> ReminderRecord:
        """Create and arm a reminder. Exactly one of `delay`, `every`, `cron`, `at`, and
        exactly one of `prompt` or `run`. `BadRequest` for anything malformed or over the
        limits. With `principal` (a tool's view sets it), the conversation must be one that
        principal owns, else `Forbidden`."""
        kind, spec, first = self._cadence(delay=delay, every=every, cron=cron, at=at)
        if (prompt is None) == (run is None):
            raise BadRequest("a reminder needs exactly one of prompt or run")
        if prompt is not None and not prompt.strip():
            raise BadRequest("reminder prompt must not be empty")
        if run is not None and not callable(run):
            raise BadRequest("reminder run must be callable")
        for name, value in (("purpose", purpose), ("channel_id", channel_id)):
            if not isinstance(value, str) or not value.strip():
                raise BadRequest(f"reminder {name} must be a non-empty string")
        if not isinstance(continuation_token, str) or not continuation_token:
            raise BadRequest("reminder continuation_token must be a non-empty string")
        if principal is not None:
            session_id = await self._owned_session(
                channel_id, continuation_token, session_id, principal
            )
        elif session_id is None:
            session_id = await self._resolve_session(channel_id, continuation_token)
        async with self._lock(f"session:{session_id}"):
            if session_id is not None:
                await self._check_room(session_id)
            return await self._put_new(
                purpose=purpose,
                channel_id=channel_id,
                continuation_token=continuation_token,
                kind=kind,
                spec=spec,
                first=first,
                session_id=session_id,
                prompt=prompt,
                until=until,
                run=run,
                principal=principal,
                created_in=created_in,
            )

    async def _put_new(
        self,
        *,
        purpose: str,
        channel_id: str,
        continuation_token: str,
        kind: ScheduleKind,
        spec: str,
        first: datetime,
        session_id: str | None,
        prompt: str | None,
        until: str | None,
        run: RunHandler | None,
        principal: str | None,
        created_in: str | None,
    ) -> ReminderRecord:
        record = ReminderRecord(
            id=_new_id(),
            purpose=purpose,
            channel_id=channel_id,
            continuation_token=continuation_token,
            kind=kind,
            spec=spec,
            next_fire_at=format_instant(first),
            session_id=session_id,
            prompt=prompt,
            until=until,
            has_handler=run is not None,
            principal=principal,
            created_in=created_in,
        )
        if run is not None:
            self._handlers[record.id] = run
        await self._store.put_reminder(record)
        await self._arm(record)
        return record

    async def list(self, *, active_only: bool = False) -> list[ReminderRecord]:
        """Every stored reminder (or only the active ones)."""
        return await self._store.list_reminders(active_only=active_only)

    async def get(self, reminder_id: str) -> ReminderRecord | None:
        """One reminder, or None when it does not exist."""
        try:
            return await self._store.get_reminder(reminder_id)
        except InvalidId:
            return None

    async def cancel(self, reminder_id: str) -> bool:
        """Stop a reminder for good. False when it does not exist or is no longer active."""
        async with self._lock(reminder_id):
            record = await self.get(reminder_id)
            if record is None or record.status != "active":
                return False
            await self._finish(record, "cancelled", "cancelled")
            return True

    async def start(self) -> None:
        """After a (re)start: disarm run-form reminders whose handler is gone, arm the rest.

        A one-shot that came due while the process was down fires once, now; a recurring one
        fires once and then resumes its cadence from now (no burst of missed ticks).
        """
        for record in await self._store.list_reminders(active_only=True):
            if record.status != "active":
                continue
            if record.has_handler and record.id not in self._handlers:
                await self._finish(record, "disarmed", HANDLER_LOST)
                log.warning("reminder %s disarmed: %s", record.id, HANDLER_LOST)
                continue
            await self._arm(record)

    async def dispatch_reminder(self, reminder_id: str) -> dict[str, Any]:
        """Fire one reminder by hand, now (dev mode). `NotFound` for an unknown id,
        `Conflict` when it is no longer active or its session is busy."""
        record = await self.get(reminder_id)
        if record is None:
            raise NotFound(f"unknown reminder {reminder_id[:80]!r}")
        if record.status != "active":
            raise Conflict(f"reminder {reminder_id} is {record.status}", code="reminder_inactive")
        return await self._fire(reminder_id, by_hand=True)

    async def fire(
        self, reminder_id: str, *, strict: bool = False, scheduled_at: datetime | None = None
    ) -> dict[str, Any] | None:
        """What the timer calls when `reminder:<id>` comes due.

        Never raises unless `strict`: an error before delivery (the store could not be read,
        say) is logged and the timer re-armed a minute later, so the reminder is not lost.
        `strict` (EventBridge Scheduler on AWS) raises instead, so the invocation fails
        and Scheduler or Lambda retries it. `scheduled_at`, the time the firing was
        scheduled for, lets a late firing of a one-shot armed again since do nothing."""
        try:
            return await self._fire(reminder_id, by_hand=False, scheduled_at=scheduled_at)
        except Exception:
            if strict:
                raise
            log.exception("reminder %s failed to fire; retrying in a minute", reminder_id)
            await self._rearm_after_error(reminder_id)
            return None

    async def rearm_overdue(self) -> builtins.list[str]:
        """Arm again each active one-shot still due `limits.overdue_grace` past its time;
        the ids it armed. What the stack's sweep calls.

        Such a reminder's firing was lost: on AWS every attempt of it failed and Lambda
        gave up (the record went to the failure queue, and the `at()` schedule deleted
        itself when it fired), so nothing else would ever fire it. It is armed for now;
        the late retry of the lost firing, should one still come, is superseded (see
        `fire`). One whose message did reach its conversation, by an attempt that died
        before it could say so, is counted as fired instead of delivered again. Recurring
        reminders keep their schedule, and their next tick comes on its own."""
        if self._timer is None:
            return []
        now = self._clock.now()
        rearmed: builtins.list[str] = []
        for record in await self._store.list_reminders(active_only=True):
            if record.status != "active" or record.kind in ("every", "cron"):
                continue
            if record.next_fire_at is None:
                continue
            due = parse_instant(record.next_fire_at)
            if due > now - self.limits.overdue_grace:
                continue
            async with self._lock(record.id):
                current = await self.get(record.id)
                if current is None or current.status != "active":
                    continue
                if current.next_fire_at != record.next_fire_at:
                    continue  # fired or armed again meanwhile
                if await self.delivered_since(current, due.timestamp()):
                    log.warning("reminder %s was delivered by a firing that died", record.id)
                    await self._after_tick(current, "delivered", current.session_id)
                    continue
                log.warning("reminder %s: its firing at %s was lost; armed again", record.id, due)
                again = replace(current, next_fire_at=format_instant(now), updated_at=now_iso())
                await self._store.put_reminder(again)
                await self._arm(again)
                rearmed.append(record.id)
        return rearmed

    async def delivered_since(self, record: ReminderRecord, since: float) -> bool:
        """Whether the reminder's conversation got its message at or after `since` (epoch
        seconds, with a second of clock skew between processes). A prompt-form reminder's
        message is told apart from another reminder's by its text."""
        if not record.session_id:
            return False
        text = None if record.has_handler else reminder_message(record)
        for event in reversed(await self._store.read(record.session_id)):
            if event.type != "message.received" or event.data.get("source") != "reminder":
                continue
            if text is not None and event.data.get("message") != text:
                continue
            try:
                at = parse_instant(event.at).timestamp()
            except ValueError:
                continue
            if at >= since - 1.0:
                return True
        return False

    async def _rearm_after_error(self, reminder_id: str) -> None:
        if self._timer is None:
            return
        try:
            when = self._clock.now() + delivery_backoff(1)
            await self._timer.arm(reminder_key(reminder_id), when)
        except Exception:
            log.exception("reminder %s could not be re-armed", reminder_id)

    # -- internals -----------------------------------------------------------------------

    def _cadence(
        self,
        *,
        delay: str | None,
        every: str | None,
        cron: str | None,
        at: datetime | str | None,
    ) -> tuple[ScheduleKind, str, datetime]:
        given = (("delay", delay), ("every", every), ("cron", cron), ("at", at))
        chosen = [(k, v) for k, v in given if v is not None]
        if len(chosen) != 1:
            raise BadRequest("a reminder needs exactly one of delay, every, cron or at")
        kind, value = chosen[0]
        now = self._clock.now()
        try:
            if kind == "delay":
                return "delay", str(value), now + parse_duration(value)
            if kind == "every":
                self._check_interval("every", str(value), now)
                return "every", str(value), now + parse_duration(value)
            if kind == "cron":
                problem = validate_cron(value)
                if problem is not None:
                    raise ValueError(problem)
                self._check_interval("cron", str(value), now)
                return "cron", " ".join(str(value).split()), next_fire(str(value), now)
            instant = parse_instant(value)
            return "at", format_instant(instant), instant
        except (ValueError, OverflowError) as exc:
            raise BadRequest(str(exc)) from None

    def _check_interval(self, kind: str, spec: str, now: datetime) -> None:
        gap = shortest_gap(kind, spec, now)
        least = self.limits.min_interval
        if gap is not None and gap < least:
            raise ValueError(
                f"a recurring reminder may fire at most every {int(least.total_seconds())} "
                f"seconds; {spec!r} fires {int(gap.total_seconds())} seconds apart"
            )

    async def _owned_session(
        self, channel_id: str, token: str, session_id: str | None, principal: str
    ) -> str:
        """The session `(channel_id, token)` names, if `principal` owns it. Every refusal
        reads the same, so a caller cannot probe which conversations exist."""
        refused = Forbidden(
            f"no conversation of yours under {channel_id} key {token[:80]!r}",
            code="reminder_forbidden",
        )
        try:
            resolved = await self._resolve_session(channel_id, token)
        except BadRequest as exc:
            if exc.code == "no_session":
                raise refused from None
            raise
        if resolved is None or (session_id is not None and session_id != resolved):
            raise refused
        session = await self._store.get_session(resolved)
        if session is None or getattr(session, "principal", None) != principal:
            raise refused
        return resolved

    async def _check_room(self, session_id: str) -> None:
        cap = self.limits.per_session
        active = await self._store.list_reminders(active_only=True)
        if sum(1 for r in active if r.session_id == session_id) >= cap:
            raise BadRequest(
                f"session {session_id} already has {cap} active reminders; cancel one first",
                code="too_many_reminders",
            )

    async def _resolve_session(self, channel_id: str, token: str) -> str | None:
        if channel_id == HTTP_CHANNEL:
            return await self._resolve_http_session(token)
        try:
            found = await self._store.find_session(channel_id, token)
        except Exception:  # an odd key is not fatal: delivery falls back to the key
            found = None
        return getattr(found, "id", None)

    async def _resolve_http_session(self, key: str) -> str:
        """HTTP tokens rotate, so an HTTP conversation is named by its session: the key is
        `ctx.session.continuation_key` (`session:<id>`) or the bare session id. Unlike a
        channel key, no session can come to exist under it later, so a miss is an error."""
        session_id = session_id_of_key(HTTP_CHANNEL, key)
        if session_id is None:
            raise BadRequest(
                "an HTTP reminder is bound with the session's continuation key "
                "(ctx.session.continuation_key, 'session:<id>'), not a continuation token"
            )
        if await self._store.get_session(session_id) is None:
            raise BadRequest(
                f"no HTTP session {session_id!r} to bind the reminder to", code="no_session"
            )
        return session_id
