"""How a reminder fires: deliver it, then re-arm or finish it, and never lose it silently.

The outcomes of one tick:

- delivered (or a run handler's `stop`/`skip`): the tick counts; the reminder re-arms on
  its cadence or finishes (`done`);
- the session is busy: retried a minute later, the tick not counted;
- the conversation is gone or takes no follow-ups (an HTTP answer such as 404): `disarmed`
  with that code, since the reminder's subject died;
- delivery failed for another reason (a store or network error): re-armed with backoff
  (1, 2, 4 ... minutes, at most an hour), the tick not counted, the error kept in
  `last_error`; after `MAX_DELIVERY_FAILURES` in a row it is `disarmed` with reason
  `delivery_failed`, so the failure shows instead of disappearing;
- the run handler raised: recorded as a handler failure (`last_error`, and for a one-shot
  the reason `handler_failed`); a recurring reminder keeps its cadence;
- the session is paused: the tick is skipped (`last_error` says so), nothing delivered;
- the agent's kill switch is on: held, retried a minute later like a busy session;
- the conversation now belongs to a principal other than the reminder's creator:
  `disarmed` with reason `principal_mismatch`, nothing delivered.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentkit.authoring.contexts import HostServices, ReminderTick, SessionInfo
from agentkit.cron.standard import format_instant, next_fire, parse_duration, parse_instant
from agentkit.errors import BadRequest, Conflict, HttpError
from agentkit.events import Event, now_iso
from agentkit.reminders import ReminderRecord
from agentkit.scheduling.limits import MAX_DELIVERY_FAILURES, ReminderLimits, delivery_backoff
from agentkit.scheduling.timer import Clock, Recurrence, Timer, reminder_key
from agentkit.sessions import HTTP_CHANNEL, Principal

if TYPE_CHECKING:
    from agentkit.engine.service import AgentService

log = logging.getLogger("agentkit.reminders")

HANDLER_LOST = "handler_lost_on_restart"
PRINCIPAL_MISMATCH = "principal_mismatch"
DELIVERY_FAILED = "delivery_failed"
HANDLER_FAILED = "handler_failed"
SKIPPED_PAUSED = "skipped: the session is paused"
_SCHEDULED_SKEW = timedelta(seconds=1)
RunHandler = Callable[[ReminderTick], Any]
Action = Literal["stop", "skip", "delivered"]


@runtime_checkable
class ReminderDelivery(Protocol):
    """An optional engine method: deliver a message to a session by id, without its
    (rotating) continuation token. Used when the agent service provides it."""

    async def deliver(self, session_id: str, message: str, *, source: str = "reminder") -> Any: ...


class ReminderStore(Protocol):
    async def put_reminder(self, reminder: ReminderRecord) -> None: ...
    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None: ...
    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]: ...
    async def find_session(self, channel_id: str, continuation_key: str) -> Any: ...
    async def get_session(self, session_id: str) -> Any: ...
    async def read(self, session_id: str) -> list[Event]: ...


class DeliveryError(Exception):
    """Delivering a reminder's message failed for a reason other than an HTTP answer (a
    store or network error): the reminder is re-armed with backoff, never marked done."""


class HandlerFailed(Exception):
    """A run handler raised (for a reason other than a failed delivery)."""


def reminder_message(record: ReminderRecord) -> str:
    """What a prompt-form reminder says to the model when it fires."""
    text = record.prompt or ""
    if record.until:
        text += (
            f"\n\n(Reminder {record.id}, purpose {record.purpose!r}. Standing condition: "
            f"{record.until.strip().rstrip('.')}. If that already holds, do nothing.)"
        )
    return text


def superseded(record: ReminderRecord, scheduled_at: datetime) -> bool:
    """Whether a firing scheduled for `scheduled_at` is for a time this one-shot has since
    been armed past (by a busy retry, a delivery backoff or the overdue sweep): a late
    retry of it would deliver the reminder a second time, and the firing of the time it
    is armed for now delivers it. A recurring reminder's ticks come from its cadence, not
    from `next_fire_at`, so they are never superseded."""
    if record.kind in ("every", "cron") or record.next_fire_at is None:
        return False
    # Scheduler's `at()` has whole seconds; `next_fire_at` may carry a fraction.
    return scheduled_at < parse_instant(record.next_fire_at) - _SCHEDULED_SKEW


def _action_of(result: Any) -> Action | None:
    if isinstance(result, Mapping):
        result = result.get("action")
    if result in ("stop", "skip", "delivered"):
        return result  # type: ignore[no-any-return]
    return None


async def _run_handler(handler: RunHandler, tick: ReminderTick, answers: list[HttpError]) -> Any:
    """Call a run handler. A failed delivery inside it (`answers`, `DeliveryError`) goes up
    as such; anything else it raises is the handler's own failure."""
    try:
        result = handler(tick)
        if inspect.isawaitable(result):
            result = await result
        return result
    except DeliveryError:
        raise
    except HttpError as exc:
        if any(exc is answer for answer in answers):
            raise
        raise HandlerFailed(f"{type(exc).__name__}: {exc}"[:500]) from exc
    except Exception as exc:
        raise HandlerFailed(f"{type(exc).__name__}: {exc}"[:500]) from exc


def _not_fired(reminder_id: str) -> dict[str, Any]:
    return {"reminderId": reminder_id, "fired": False, "action": None}


class ReminderFiring:
    """The firing half of `ReminderService` (a mixin: the service sets the attributes)."""

    _store: ReminderStore
    _service: AgentService | None
    _timer: Timer | None
    _clock: Clock
    _host: HostServices | None
    limits: ReminderLimits
    _handlers: dict[str, RunHandler]
    _locks: dict[str, asyncio.Lock]

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _fire(
        self, reminder_id: str, *, by_hand: bool, scheduled_at: datetime | None = None
    ) -> dict[str, Any]:
        async with self._lock(reminder_id):
            record = await self._store.get_reminder(reminder_id)
            if record is None or record.status != "active":
                return _not_fired(reminder_id)
            if scheduled_at is not None and superseded(record, scheduled_at):
                log.info("reminder %s: a late firing of a time it was armed past", record.id)
                return {**_not_fired(reminder_id), "superseded": True}
            if record.has_handler and reminder_id not in self._handlers:
                await self._finish(record, "disarmed", HANDLER_LOST)
                return _not_fired(reminder_id)
            if not await self._still_owned(record):
                await self._finish(record, "disarmed", PRINCIPAL_MISMATCH)
                log.warning("reminder %s disarmed: %s", record.id, PRINCIPAL_MISMATCH)
                return _not_fired(reminder_id)
            try:
                action, session_id = await self._tick(record)
            except HttpError as exc:
                return await self._delivery_failed(record, exc, by_hand=by_hand)
            except DeliveryError as exc:
                if by_hand:
                    raise Conflict(str(exc), code="delivery_failed") from exc
                return await self._retry_later(record, str(exc))
            except HandlerFailed as exc:
                log.error("reminder %s run handler failed: %s", reminder_id, exc)
                return await self._after_tick(record, "skip", None, error=str(exc))
            try:
                return await self._after_tick(record, action, session_id)
            except Exception:
                # Delivered already: raising would have a retry deliver it twice.
                log.exception("reminder %s delivered, but its record was not updated", record.id)
                return {"reminderId": record.id, "fired": True, "action": action}

    async def _still_owned(self, record: ReminderRecord) -> bool:
        """A reminder a tool created acts for its creator only while the conversation is
        still that principal's (checked again at every firing, not only at creation)."""
        if record.principal is None or record.session_id is None:
            return True
        session = await self._store.get_session(record.session_id)
        if session is None:
            return True  # delivery answers 404 and disarms it with that reason
        return getattr(session, "principal", None) == record.principal

    async def _tick(self, record: ReminderRecord) -> tuple[Action, str | None]:
        delivered: list[str | None] = []
        # The delivery's own HTTP answers, told apart from HttpErrors the handler raises.
        answers: list[HttpError] = []

        async def followup(message: str | None = None, **kwargs: Any) -> Any:
            text = message if message is not None else kwargs.get("message")
            if not isinstance(text, str) or not text.strip():
                raise BadRequest("followup needs a non-empty message")
            try:
                accepted = await self._deliver(record, text)
            except HttpError as exc:
                answers.append(exc)
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise DeliveryError(f"{type(exc).__name__}: {exc}"[:500]) from exc
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
            host=self._tick_host(record),
        )
        result = await _run_handler(handler, tick, answers)
        action = _action_of(result)
        if action is None:
            log.error(
                "reminder %s run handler returned %r; expected stop, skip or delivered",
                record.id,
                result,
            )
            action = "delivered" if delivered else "skip"
        return action, delivered[-1] if delivered else None

    def _tick_host(self, record: ReminderRecord) -> HostServices:
        host = self._host or HostServices(reminders=self)  # type: ignore[arg-type]
        if record.principal is None:
            return host
        session = SessionInfo(
            id=record.session_id or "",
            channel_id=record.channel_id,
            principal=record.principal,
            continuation_key=record.continuation_token,
        )
        return host.for_session(session)

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
        if record.principal is not None:
            return Principal(record.principal)  # a tool's reminder acts for its creator only
        owner = None
        if record.session_id is not None:
            session = await self._store.get_session(record.session_id)
            owner = getattr(session, "principal", None)
        # Host-made reminders act for the conversation's owner; admin lets the service
        # accept one into a session created by a channel whose principal it cannot re-derive.
        return Principal(owner or f"reminder:{record.id}", admin=owner is None)

    async def _after_tick(
        self,
        record: ReminderRecord,
        action: Action,
        session_id: str | None,
        *,
        error: str | None = None,
    ) -> dict[str, Any]:
        fired = replace(
            record,
            fire_count=record.fire_count + 1,
            session_id=record.session_id or session_id,
            failures=0,
            last_error=error,
            updated_at=now_iso(),
        )
        nxt = None if action == "stop" else self._next_after(fired, self._clock.now())
        if nxt is None:
            reason = HANDLER_FAILED if error else ("stopped" if action == "stop" else "fired")
            await self._finish(fired, "done", reason)
        else:
            fired = replace(fired, next_fire_at=format_instant(nxt))
            await self._store.put_reminder(fired)
            await self._arm(fired)
        out = {
            "reminderId": record.id,
            "fired": True,
            "action": action,
            "sessionId": fired.session_id,
            "fireCount": fired.fire_count,
        }
        if error:
            out["error"] = error
        return out

    async def _retry_later(self, record: ReminderRecord, error: str) -> dict[str, Any]:
        failures = record.failures + 1
        failed = replace(record, failures=failures, last_error=error, updated_at=now_iso())
        if failures >= MAX_DELIVERY_FAILURES:
            await self._finish(failed, "disarmed", DELIVERY_FAILED)
            log.error("reminder %s disarmed after %d failed deliveries", record.id, failures)
            return {**_not_fired(record.id), "error": error}
        wait = delivery_backoff(failures)
        retry = replace(failed, next_fire_at=format_instant(self._clock.now() + wait))
        await self._store.put_reminder(retry)
        await self._arm(retry)
        log.warning("reminder %s: delivery failed (%s); retrying in %s", record.id, error, wait)
        return {**_not_fired(record.id), "error": error, "retryAt": retry.next_fire_at}

    async def _delivery_failed(
        self, record: ReminderRecord, exc: HttpError, *, by_hand: bool
    ) -> dict[str, Any]:
        if by_hand:
            raise exc
        if exc.code == "session_paused":
            return await self._skipped_paused(record)
        # While the agent's kill switch is on, a reminder holds: it is delivered once lifted.
        if exc.code in ("session_busy", "not_ready", "agent_paused"):
            wait = self.limits.busy_retry
            retry = replace(record, next_fire_at=format_instant(self._clock.now() + wait))
            await self._store.put_reminder(retry)
            await self._arm(retry)
            log.info("reminder %s: session busy, retrying in %s", record.id, wait)
            return _not_fired(record.id)
        # The conversation is gone or no longer takes follow-ups: the reminder's subject died.
        await self._finish(record, "disarmed", exc.code)
        log.warning("reminder %s disarmed: %s", record.id, exc)
        return _not_fired(record.id)

    async def _skipped_paused(self, record: ReminderRecord) -> dict[str, Any]:
        """A paused session's reminder skips this tick, and says so in `last_error`: a
        recurring one waits for its next tick, a one-shot is done (`skipped_session_paused`)."""
        skipped = replace(record, last_error=SKIPPED_PAUSED, updated_at=now_iso())
        nxt = self._next_after(skipped, self._clock.now())
        log.info("reminder %s skipped: its session is paused", record.id)
        if nxt is None:
            await self._finish(skipped, "done", "skipped_session_paused")
        else:
            skipped = replace(skipped, next_fire_at=format_instant(nxt))
            await self._store.put_reminder(skipped)
            await self._arm(skipped)
        return {**_not_fired(record.id), "skipped": "session_paused"}

    def _next_after(self, record: ReminderRecord, now: datetime) -> datetime | None:
        if record.kind == "every":
            return now + parse_duration(record.spec)
        if record.kind == "cron":
            return next_fire(record.spec, now)
        return None  # one-shots

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
