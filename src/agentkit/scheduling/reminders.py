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

`fire_count` counts the ticks before the current one, so `if tick.fire_count >= 3: stop`
wakes the conversation three times.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentkit.authoring.contexts import HostServices, ReminderTick
from agentkit.errors import BadRequest, Conflict, HttpError, InvalidId, NotFound
from agentkit.events import now_iso
from agentkit.scheduling.cron import (
    format_instant,
    next_fire,
    parse_duration,
    parse_instant,
    validate_cron,
)
from agentkit.scheduling.records import ReminderRecord, ScheduleKind
from agentkit.scheduling.timer import Clock, Recurrence, SystemClock, Timer, reminder_key
from agentkit.sessions import HTTP_CHANNEL, Principal, session_id_of_key

if TYPE_CHECKING:
    from agentkit.engine.service import AgentService

__all__ = ["HANDLER_LOST", "ReminderDelivery", "ReminderService", "reminder_message"]

log = logging.getLogger("agentkit.reminders")

HANDLER_LOST = "handler_lost_on_restart"
BUSY_RETRY = timedelta(minutes=1)
RunHandler = Callable[[ReminderTick], Any]
Action = Literal["stop", "skip", "delivered"]


@runtime_checkable
class ReminderDelivery(Protocol):
    """An optional engine method: deliver a message to a session by id, without its
    (rotating) continuation token. Used when the agent service provides it."""

    async def deliver(self, session_id: str, message: str, *, source: str = "reminder") -> Any: ...


class _Store(Protocol):
    async def put_reminder(self, reminder: ReminderRecord) -> None: ...
    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None: ...
    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]: ...
    async def find_session(self, channel_id: str, continuation_key: str) -> Any: ...
    async def get_session(self, session_id: str) -> Any: ...


def reminder_message(record: ReminderRecord) -> str:
    """What a prompt-form reminder says to the model when it fires."""
    text = record.prompt or ""
    if record.until:
        text += (
            f"\n\n(Reminder {record.id}, purpose {record.purpose!r}. Standing condition: "
            f"{record.until.strip().rstrip('.')}. If that already holds, do nothing.)"
        )
    return text


def _new_id() -> str:
    return "rem_" + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")


def _action_of(result: Any) -> Action | None:
    if isinstance(result, Mapping):
        result = result.get("action")
    if result in ("stop", "skip", "delivered"):
        return result  # type: ignore[no-any-return]
    return None


class ReminderService:
    """`host.reminders`: create, list, get, cancel and fire reminders.

    `timer` is None when timers are off (`--dev`): reminders are stored but only fire
    through `dispatch_reminder`. `service` may be attached after construction (the runtime
    and the reminders need each other: tools call `host.reminders`).
    """

    def __init__(
        self,
        store: _Store,
        *,
        service: AgentService | None = None,
        timer: Timer | None = None,
        clock: Clock | None = None,
        host: HostServices | None = None,
    ) -> None:
        self._store = store
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
    ) -> ReminderRecord:
        """Create and arm a reminder. Exactly one of `delay`, `every`, `cron`, `at`, and
        exactly one of `prompt` or `run`. `BadRequest` for anything malformed."""
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
        if session_id is None:
            session_id = await self._resolve_session(channel_id, continuation_token)
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

    async def fire(self, reminder_id: str) -> None:
        """What the timer calls when `reminder:<id>` comes due. Never raises."""
        try:
            await self._fire(reminder_id, by_hand=False)
        except Exception:
            log.exception("reminder %s failed to fire", reminder_id)

    # -- internals -----------------------------------------------------------------------

    def _lock(self, reminder_id: str) -> asyncio.Lock:
        return self._locks.setdefault(reminder_id, asyncio.Lock())

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
                return "every", str(value), now + parse_duration(value)
            if kind == "cron":
                problem = validate_cron(value)
                if problem is not None:
                    raise ValueError(problem)
                return "cron", " ".join(str(value).split()), next_fire(str(value), now)
            instant = parse_instant(value)
            return "at", format_instant(instant), instant
        except ValueError as exc:
            raise BadRequest(str(exc)) from None

    def _next_after(self, record: ReminderRecord, now: datetime) -> datetime | None:
        if record.kind == "every":
            return now + parse_duration(record.spec)
        if record.kind == "cron":
            return next_fire(record.spec, now)
        return None  # one-shots

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
            raise BadRequest(f"no HTTP session {session_id!r} to bind the reminder to")
        return session_id

    async def _arm(self, record: ReminderRecord) -> None:
        if self._timer is None or record.next_fire_at is None:
            return
        recurrence = (
            Recurrence(kind=record.kind, spec=record.spec)
            if record.kind in ("every", "cron")
            else None
        )
        await self._timer.arm(
            reminder_key(record.id), parse_instant(record.next_fire_at), recurrence=recurrence
        )

    async def _finish(self, record: ReminderRecord, status: Any, reason: str) -> ReminderRecord:
        done = replace(
            record, status=status, reason=reason, next_fire_at=None, updated_at=now_iso()
        )
        await self._store.put_reminder(done)
        self._handlers.pop(record.id, None)
        if self._timer is not None:
            await self._timer.disarm(reminder_key(record.id))
        return done

    async def _fire(self, reminder_id: str, *, by_hand: bool) -> dict[str, Any]:
        async with self._lock(reminder_id):
            record = await self._store.get_reminder(reminder_id)
            if record is None or record.status != "active":
                return {"reminderId": reminder_id, "fired": False, "action": None}
            if record.has_handler and reminder_id not in self._handlers:
                await self._finish(record, "disarmed", HANDLER_LOST)
                return {"reminderId": reminder_id, "fired": False, "action": None}
            try:
                action, session_id = await self._tick(record)
            except HttpError as exc:
                return await self._delivery_failed(record, exc, by_hand=by_hand)
            except Exception:  # a failing run handler skips this tick; the cadence goes on
                log.exception("reminder %s run handler failed", reminder_id)
                action, session_id = "skip", None
            return await self._after_tick(record, action, session_id)

    async def _tick(self, record: ReminderRecord) -> tuple[Action, str | None]:
        delivered: list[str | None] = []

        async def followup(message: str | None = None, **kwargs: Any) -> Any:
            text = message if message is not None else kwargs.get("message")
            if not isinstance(text, str) or not text.strip():
                raise BadRequest("followup needs a non-empty message")
            accepted = await self._deliver(record, text)
            delivered.append(getattr(accepted, "session_id", None))
            return accepted

        handler = self._handlers.get(record.id)
        if handler is None:
            await followup(reminder_message(record))
            return "delivered", delivered[0] if delivered else None
        tick = ReminderTick(
            reminder_id=record.id,
            fire_count=record.fire_count,
            followup=followup,
            host=self._host or HostServices(reminders=self),
        )
        result = handler(tick)
        if inspect.isawaitable(result):
            result = await result
        action = _action_of(result)
        if action is None:
            log.error(
                "reminder %s run handler returned %r; expected stop, skip or delivered",
                record.id,
                result,
            )
            action = "delivered" if delivered else "skip"
        return action, delivered[-1] if delivered else None

    async def _deliver(self, record: ReminderRecord, message: str) -> Any:
        service = self._service
        if service is None:
            raise Conflict("reminders have no agent service attached", code="not_ready")
        if record.session_id is not None and isinstance(service, ReminderDelivery):
            return await service.deliver(record.session_id, message, source="reminder")
        principal = await self._principal_for(record)
        if record.channel_id == HTTP_CHANNEL and record.session_id is not None:
            # The HTTP token rotates after every follow-up, so no key can reach the session;
            # only a service with `deliver` can.
            log.warning("reminder %s: service cannot deliver by session id", record.id)
        return await service.follow_up_by_key(
            record.channel_id,
            record.continuation_token,
            message,
            principal=principal,
            source="reminder",
        )

    async def _principal_for(self, record: ReminderRecord) -> Principal:
        owner = None
        if record.session_id is not None:
            session = await self._store.get_session(record.session_id)
            owner = getattr(session, "principal", None)
        # Reminders act for the conversation's owner; admin lets the service accept a
        # reminder into a session created by a channel whose principal it cannot re-derive.
        return Principal(owner or f"reminder:{record.id}", admin=owner is None)

    async def _after_tick(
        self, record: ReminderRecord, action: Action, session_id: str | None
    ) -> dict[str, Any]:
        fired = replace(
            record,
            fire_count=record.fire_count + 1,
            session_id=record.session_id or session_id,
            updated_at=now_iso(),
        )
        nxt = None if action == "stop" else self._next_after(fired, self._clock.now())
        if nxt is None:
            await self._finish(fired, "done", "stopped" if action == "stop" else "fired")
        else:
            fired = replace(fired, next_fire_at=format_instant(nxt))
            await self._store.put_reminder(fired)
            await self._arm(fired)
        return {
            "reminderId": record.id,
            "fired": True,
            "action": action,
            "sessionId": fired.session_id,
            "fireCount": fired.fire_count,
        }

    async def _delivery_failed(
        self, record: ReminderRecord, exc: HttpError, *, by_hand: bool
    ) -> dict[str, Any]:
        if by_hand:
            raise exc
        if exc.code in ("session_busy", "not_ready"):
            retry = replace(record, next_fire_at=format_instant(self._clock.now() + BUSY_RETRY))
            await self._store.put_reminder(retry)
            await self._arm(retry)
            log.info("reminder %s: session busy, retrying in %s", record.id, BUSY_RETRY)
            return {"reminderId": record.id, "fired": False, "action": None}
        # The conversation is gone or no longer takes follow-ups: the reminder's subject died.
        await self._finish(record, "disarmed", exc.code)
        log.warning("reminder %s disarmed: %s", record.id, exc)
        return {"reminderId": record.id, "fired": False, "action": None}
