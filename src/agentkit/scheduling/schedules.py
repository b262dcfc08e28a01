"""Firing schedules: the one production path, used by the cadence, dev dispatch and AWS.

`ScheduleDispatcher.dispatch_schedule(id)` fires a schedule exactly once:

- a markdown schedule starts a task-mode session on the `schedule` channel with the body
  as its prompt, owned by the principal `schedule:<id>`;
- a handler schedule calls `run(ScheduleContext)`. `receive(channel, message=..., auth=...)`
  hands a message into a channel. Until channel packs exist, a channel is named by its id
  (or any object with an `id`/`name`): with a `continuation_key` it continues the session
  that key points at (or starts one bound to the key), otherwise it starts a chat session
  on that channel. The session ids it touched are returned as `sessionIds`.

`ScheduleRunner` arms every schedule on its cron cadence for `agentkit serve`. With a
`SlotLedger` it keeps each schedule's last fired slot in the store, and on start deals with
the slots missed while the server was down by the schedule's `catch_up` policy (see
`scheduling.catch_up`): each is recorded, and at most `CATCH_UP_CAP` are fired.
"""

# Coverage is below 80%: schedules are tested through the local timer and `--dev`
# dispatch; the defensive paths (a missing or wrong handler reference, a schedule not armed,
# a timer key with no owner, a failing `wait_until`) only log and are not driven by tests.

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from agentkit.authoring.contexts import HostServices, ScheduleContext
from agentkit.authoring.schedules import ScheduleDefinition
from agentkit.cron.standard import next_fire, validate_cron
from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.service import AgentService
from agentkit.errors import Conflict, HttpError, NotFound
from agentkit.project.manifest import CodeRef, ScheduleSpec
from agentkit.scheduling.catch_up import SlotLedger, missed_slots, slots_to_fire
from agentkit.scheduling.timer import Timer, schedule_key, split_key
from agentkit.sessions import Principal

__all__ = [
    "SCHEDULE_CHANNEL",
    "DispatchesSchedules",
    "ScheduleDispatcher",
    "ScheduleHandlerError",
    "ScheduleRunner",
    "reminder_timers_enabled",
    "route_timer_key",
    "schedules_enabled",
]

log = logging.getLogger("agentkit.schedules")

SCHEDULE_CHANNEL = "schedule"
HOLD_POLL = 2.0  # how often held schedules look whether the kill switch was lifted


class ScheduleHandlerError(HttpError):
    """A schedule's own `run` handler raised. It ran (perhaps part-way), so the firing is
    recorded as failed and not retried, unlike an error of the store or the service."""

    status = 500
    code = "schedule_handler_failed"


class _Definitions(Protocol):
    def definition(self, ref: CodeRef) -> Any: ...


def schedules_enabled(*, dev: bool, no_schedules: bool = False) -> bool:
    """Schedules fire on their cadence under `serve`, unless `--no-schedules` or `--dev`."""
    return not dev and not no_schedules


def reminder_timers_enabled(*, dev: bool, reminders: bool | None = None) -> bool:
    """Reminder timers default to on, off under `--dev`; an explicit choice wins."""
    return (not dev) if reminders is None else reminders


def _principal(auth: Any, default: Principal) -> Principal:
    if isinstance(auth, Principal):
        return auth
    if isinstance(auth, str) and auth:
        return Principal(auth)
    return default


def _channel_id(channel: Any) -> str:
    if isinstance(channel, str) and channel:
        return channel
    for attr in ("id", "name", "channel_id"):
        value = getattr(channel, attr, None)
        if isinstance(value, str) and value:
            return value
    raise ValueError(f"receive needs a channel id or a channel object, got {channel!r}")


def _host_for(host: HostServices, principal: str) -> HostServices:
    """The host services a schedule handler gets: reminders narrowed to the schedule's own
    principal, like a tool's are narrowed to its session's."""
    scope = getattr(host.reminders, "for_principal", None)
    if not callable(scope):
        return host
    return HostServices(
        reminders=scope(principal), mcp=host.mcp, logger=host.logger, extras=host.extras
    )


class _Firing:
    """The state of one handler-schedule firing: sessions touched, work to wait for."""

    def __init__(self, service: AgentService, schedule_id: str, channels: Any = None) -> None:
        self.service = service
        self.channels = channels  # the agent's ChannelRuntime, when it has channels
        self.schedule_id = schedule_id
        self.principal = Principal(f"schedule:{schedule_id}")
        self.session_ids: list[str] = []
        self.skipped: list[str] = []  # continuation keys of paused sessions not delivered to
        self.pending: list[asyncio.Future[Any]] = []

    async def receive(
        self,
        channel: Any,
        message: str | None = None,
        *,
        auth: Any = None,
        continuation_key: str | None = None,
        **_: Any,
    ) -> Any:
        if not isinstance(message, str) or not message.strip():
            raise ValueError("receive needs a non-empty message")
        if self.channels is not None and self._is_channel(channel):
            # A real channel: its session is the channel's (`channel:<id>`), keyed as it says.
            handed = await self.channels.receive(
                channel, message, continuation_key=continuation_key, source="schedule"
            )
            self._touched(handed)
            return handed
        channel_id = _channel_id(channel)
        principal = _principal(auth, self.principal)
        accepted: Any = None
        if continuation_key is not None:
            try:
                accepted = await self.service.follow_up_by_key(
                    channel_id, continuation_key, message, principal=principal, source="schedule"
                )
            except NotFound:
                accepted = None
            except Conflict as exc:
                if exc.code != "session_paused":
                    raise
                # A paused conversation is skipped by this firing, and the skip recorded.
                self.skipped.append(continuation_key)
                log.info("schedule %s skipped a paused session", self.schedule_id)
                return None
        if accepted is None:
            accepted = await self.service.start_session(
                message,
                principal=principal,
                channel_id=channel_id,
                mode="chat",
                continuation_key=continuation_key,
                source="schedule",
            )
        self._touched(accepted)
        return accepted

    def _is_channel(self, channel: Any) -> bool:
        try:
            self.channels.channel_id(channel)
        except (NotFound, ValueError):
            return False
        return True

    def _touched(self, accepted: Any) -> None:
        session_id = getattr(accepted, "session_id", None)
        if isinstance(session_id, str) and session_id not in self.session_ids:
            self.session_ids.append(session_id)

    async def call_tool(self, name: str, tool_input: Mapping[str, Any] | None = None) -> Any:
        return await self.service.call_tool(name, dict(tool_input or {}), principal=self.principal)

    def wait_until(self, awaitable: Awaitable[Any]) -> None:
        self.pending.append(asyncio.ensure_future(awaitable))

    async def settle(self) -> None:
        # Work handed to wait_until may itself call wait_until; drain until quiet.
        while self.pending:
            batch, self.pending = self.pending, []
            for result in await asyncio.gather(*batch, return_exceptions=True):
                if isinstance(result, BaseException):
                    log.error("schedule %s: wait_until work failed: %r", self.schedule_id, result)


@runtime_checkable
class DispatchesSchedules(Protocol):
    """Optional, on a mount's host: fire a schedule by hand, exactly once, through the
    production path (`POST /v1/dev/schedules/{id}`; without it that route answers 404)."""

    async def dispatch_schedule(self, schedule_id: str) -> dict[str, Any]: ...


class ScheduleDispatcher:
    """Fires schedules through the agent service: the production path for every trigger."""

    def __init__(
        self,
        service: AgentService,
        *,
        definitions: _Definitions | None = None,
        host: HostServices | None = None,
        channels: Any = None,
    ) -> None:
        self._service = service
        self._definitions = definitions
        self._host = host or HostServices()
        self._channels = channels

    @property
    def schedules(self) -> list[ScheduleSpec]:
        return list(self._service.manifest.schedules)

    def spec(self, schedule_id: str) -> ScheduleSpec:
        for spec in self._service.manifest.schedules:
            if spec.id == schedule_id:
                return spec
        raise NotFound(f"unknown schedule {schedule_id!r}")

    async def dispatch_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Fire one schedule now, exactly once. `{"scheduleId", "sessionIds"}`; `NotFound`
        for an unknown id. A handler's own exception is raised as `ScheduleHandlerError`
        (its cause kept); any other error is the store's or the service's."""
        spec = self.spec(schedule_id)
        if spec.kind == "markdown":
            return await self._start_task(spec.id, spec.prompt or self._markdown_of(spec))
        definition = self._load(spec)
        if definition.run is None:
            return await self._start_task(spec.id, definition.markdown or "")
        firing = _Firing(self._service, spec.id, self._channels)
        ctx = ScheduleContext(
            schedule_id=spec.id,
            receive=firing.receive,
            call_tool=firing.call_tool,
            wait_until=firing.wait_until,
            app_auth=firing.principal.id,
            host=_host_for(self._host, firing.principal.id),
        )
        try:
            result = definition.run(ctx)
            if inspect.isawaitable(result):
                await result
        except (asyncio.CancelledError, HttpError):
            raise
        except Exception as exc:
            message = f"schedule {spec.id} handler failed: {type(exc).__name__}: {exc}"
            raise ScheduleHandlerError(message[:500]) from exc
        finally:
            await firing.settle()
        out: dict[str, Any] = {"scheduleId": spec.id, "sessionIds": firing.session_ids}
        if firing.skipped:
            out["skippedPaused"] = firing.skipped
        return out

    async def _start_task(self, schedule_id: str, prompt: str) -> dict[str, Any]:
        """A prompt-only firing: one task-mode session on the schedule channel."""
        accepted = await self._service.start_session(
            prompt,
            principal=Principal(f"schedule:{schedule_id}"),
            channel_id=SCHEDULE_CHANNEL,
            mode="task",
            source="schedule",
        )
        return {"scheduleId": schedule_id, "sessionIds": [accepted.session_id]}

    def _load(self, spec: ScheduleSpec) -> ScheduleDefinition:
        if spec.ref is None:
            raise NotFound(f"schedule {spec.id!r} has no handler reference")
        loaded = self._definitions.definition(spec.ref) if self._definitions else spec.ref.load()
        if not isinstance(loaded, ScheduleDefinition):
            raise TypeError(f"schedule {spec.id!r} is not a define_schedule(...) definition")
        return loaded

    def _markdown_of(self, spec: ScheduleSpec) -> str:
        definition = self._load(spec)
        return definition.markdown or ""


class ScheduleRunner:
    """Arms every valid schedule on its cadence and fires it through the dispatcher."""

    def __init__(
        self,
        dispatcher: ScheduleDispatcher,
        timer: Timer,
        ledger: SlotLedger | None = None,
        switch: PauseSwitch | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._timer = timer
        # The agent's kill switch: while on, slots are held (not fired, not marked fired),
        # and caught up by each schedule's `catch_up` once it is lifted (`lift`).
        self.switch = switch
        self.held: set[str] = set()
        self._watcher: asyncio.Task[None] | None = None
        # Where fired slots are kept, so slots missed while the host was down are caught
        # up on the next start (`scheduling.catch_up`); None: they are skipped.
        self._ledger = ledger
        self._slots: dict[str, datetime] = {}
        # (schedule id, slot) of recent firings, newest last; bounded for long-lived servers.
        self.history: deque[tuple[str, datetime]] = deque(maxlen=1000)
        # (schedule id, error) of recent failed firings: handler errors and others.
        self.failures: deque[tuple[str, str]] = deque(maxlen=1000)

    async def start(self) -> None:
        """Arm each schedule at its next slot after now, after catching up the slots it
        missed since it last fired (its `catch_up` policy)."""
        now = self._timer.clock.now()
        for spec in self._dispatcher.schedules:
            problem = validate_cron(spec.cron)
            if problem is not None:
                log.error("schedule %s not armed: %s", spec.id, problem)
                continue
            await self._arm(spec.id, spec.cron, now)
            await self._catch_up(spec, now)
        if self.switch is not None and self._watcher is None:
            self._watcher = asyncio.create_task(self._watch_switch())

    async def _watch_switch(self) -> None:
        """Lift held schedules soon after the switch is lifted, however it was flipped."""
        while True:
            await asyncio.sleep(HOLD_POLL)
            try:
                if self.held:
                    await self.lift()
            except Exception:
                log.exception("held schedules could not be caught up")

    async def _switch_on(self) -> bool:
        return self.switch is not None and (await self.switch.read()).on

    async def lift(self) -> int:
        """Once the kill switch is lifted, fire the slots it held, by each schedule's
        `catch_up` policy; returns how many schedules were caught up (0 while still on)."""
        if not self.held or await self._switch_on():
            return 0
        held, self.held = self.held, set()
        now = self._timer.clock.now()
        for spec in self._dispatcher.schedules:
            if spec.id not in held:
                continue
            if self._ledger is None:
                await self._dispatch(spec.id, now)  # nothing says how many: fire once
            else:
                await self._catch_up(spec, now)
        return len(held)

    async def _catch_up(self, spec: ScheduleSpec, now: datetime) -> None:
        if self._ledger is None:
            return
        try:
            ledger = await self._ledger.load(spec.id)
            if ledger.last_slot is None:
                # First start: nothing was missed, but the start is where counting begins.
                await self._ledger.fired(spec.id, now)
                return
            missed, total = missed_slots(spec.cron, ledger.last_slot, now)
            if not missed:
                return
            chosen = slots_to_fire(spec.catch_up, missed)
            await self._ledger.note_missed(spec.id, missed, total, chosen, spec.catch_up, now)
        except Exception:
            log.exception("schedule %s: its missed slots could not be read", spec.id)
            return
        for slot in chosen:
            await self._dispatch(spec.id, slot)

    async def _dispatch(self, schedule_id: str, slot: datetime) -> None:
        self.history.append((schedule_id, slot))
        try:
            result = await self._dispatcher.dispatch_schedule(schedule_id)
            log.info("schedule %s fired: %s", schedule_id, result["sessionIds"])
        except ScheduleHandlerError as exc:
            self.failures.append((schedule_id, exc.message or exc.code))
            log.error("schedule %s: its handler failed", schedule_id, exc_info=exc.__cause__)
        except Exception as exc:
            self.failures.append((schedule_id, f"{type(exc).__name__}: {exc}"))
            log.exception("schedule %s could not be fired", schedule_id)

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        for schedule_id in list(self._slots):
            await self._timer.disarm(schedule_key(schedule_id))
        self._slots.clear()

    def next_slots(self) -> dict[str, datetime]:
        """The next firing of every armed schedule."""
        return dict(self._slots)

    async def fire(self, schedule_id: str) -> None:
        """What the timer calls at a slot: dispatch once, then arm the next slot. Never raises."""
        slot = self._slots.pop(schedule_id, None)
        try:
            spec = self._dispatcher.spec(schedule_id)
        except NotFound:
            log.warning("schedule %s fired but is no longer in the manifest", schedule_id)
            return
        now = self._timer.clock.now()
        # Arm the next slot before running, so a slow firing cannot make the next one late.
        await self._arm(schedule_id, spec.cron, max(now, slot) if slot else now)
        if await self._switch_on():
            self.held.add(schedule_id)
            log.info("schedule %s held: the agent's kill switch is on", schedule_id)
            return
        await self.lift()  # slots held earlier go first, by their catch_up policy
        if self._ledger is not None:
            try:
                await self._ledger.fired(schedule_id, slot or now)
            except Exception:
                log.exception("schedule %s: its fired slot could not be recorded", schedule_id)
        await self._dispatch(schedule_id, slot or now)

    async def _arm(self, schedule_id: str, cron: str, after: datetime) -> None:
        slot = next_fire(cron, after)
        self._slots[schedule_id] = slot
        await self._timer.arm(schedule_key(schedule_id), slot)


async def route_timer_key(
    key: str, *, schedules: ScheduleRunner | None, reminders: Any | None
) -> None:
    """Send a fired timer key to its owner (`ScheduleRunner.fire` / `ReminderService.fire`)."""
    kind, ident = split_key(key)
    if kind == "schedule" and schedules is not None:
        await schedules.fire(ident)
    elif kind == "reminder" and reminders is not None:
        await reminders.fire(ident)
    else:
        log.warning("timer key %s has no owner on this host", key)
