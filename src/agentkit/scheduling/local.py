"""The local composition of schedules and reminders: one timer, one router of its keys.

A host builds this once it has its store and agent service:

    scheduling = LocalScheduling(store, runtime, definitions=bundle, host=services, dev=dev)
    services.reminders = scheduling.reminders
    await scheduling.start()      # after runtime.recover()
    ...
    await scheduling.aclose()

Under `--dev` nothing is armed: `dispatch_schedule` and `dispatch_reminder` are the only
way schedules and reminders run. `schedules=False` is `--no-schedules`; `reminders`
overrides the reminder-timer default (on, off under `--dev`).
"""

from __future__ import annotations

from typing import Any

from agentkit.authoring.contexts import HostServices
from agentkit.engine.service import AgentService
from agentkit.scheduling.catch_up import SlotLedger, describe_schedules
from agentkit.scheduling.reminders import ReminderService
from agentkit.scheduling.schedules import (
    ScheduleDispatcher,
    ScheduleRunner,
    reminder_timers_enabled,
    route_timer_key,
    schedules_enabled,
)
from agentkit.scheduling.timer import Clock, LocalTimer

__all__ = ["LocalScheduling"]


class LocalScheduling:
    """Schedules on their cadence and reminders on their timers, in this process."""

    def __init__(
        self,
        store: Any,
        service: AgentService,
        *,
        definitions: Any = None,
        host: HostServices | None = None,
        dev: bool = False,
        schedules: bool = True,
        reminders: bool | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.host = host or HostServices()
        self.timer = LocalTimer(clock, self._on_fire)
        self.dispatcher = ScheduleDispatcher(service, definitions=definitions, host=self.host)
        self.ledger = SlotLedger(store)
        self.runner: ScheduleRunner | None = (
            ScheduleRunner(
                self.dispatcher,
                self.timer,
                self.ledger,
                service.switch,
            )
            if schedules_enabled(dev=dev, no_schedules=not schedules)
            else None
        )
        timers_on = reminder_timers_enabled(dev=dev, reminders=reminders)
        self.reminders = ReminderService(
            store,
            service=service,
            timer=self.timer if timers_on else None,
            clock=self.timer.clock,
            host=self.host,
        )
        if self.host.reminders is None:
            self.host.reminders = self.reminders

    async def _on_fire(self, key: str) -> None:
        await route_timer_key(key, schedules=self.runner, reminders=self.reminders)

    async def start(self) -> None:
        """Re-arm stored reminders (disarming lost run handlers) and arm schedules."""
        await self.reminders.start()
        if self.runner is not None:
            await self.runner.start()

    async def dispatch_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Fire one schedule now, exactly once (the dev route and `handle.dispatch_schedule`)."""
        return await self.dispatcher.dispatch_schedule(schedule_id)

    async def list_schedules(self) -> list[dict[str, Any]]:
        """Every schedule with its next slot and the slots it missed."""
        slots = self.runner.next_slots() if self.runner is not None else {}
        return await describe_schedules(self.dispatcher.schedules, self.ledger, slots)

    async def dispatch_reminder(self, reminder_id: str) -> dict[str, Any]:
        """Fire one reminder now (the dev route and `handle.dispatch_reminder`)."""
        return await self.reminders.dispatch_reminder(reminder_id)

    async def aclose(self) -> None:
        if self.runner is not None:
            await self.runner.stop()
        await self.timer.close()
