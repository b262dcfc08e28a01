"""Dev-only routes: dispatch a schedule or fire a reminder by hand (`serve --dev` only).

Under `--dev` schedules and reminder timers never fire on their own; these routes are the
only way they run, through the same path production uses. The app factory includes the
router only when `ServerOptions.dev` is set.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from agentkit.errors import Forbidden, NotFound
from agentkit.reminders import ReminderRecord
from agentkit.scheduling.catch_up import ListsSchedules
from agentkit.scheduling.reminders import KeepsReminders
from agentkit.scheduling.schedules import DispatchesSchedules
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.state import principal, server_state
from agentkit.sessions import Principal

__all__ = ["create_dev_router", "dev_router"]


def admin(request: Request, caller: Annotated[Principal, Depends(principal)]) -> Principal:
    """Dev routes act on every session (they list and fire every reminder), so they are
    for the local developer only: a direct loopback caller (the router exists only under
    `serve --dev`), not any principal a bearer token admits, and not a browser page
    reaching loopback on the developer's behalf (see `server.local_origin`)."""
    auth = server_state(request).options.auth
    if not auth.has_local_rights(request, caller):
        raise Forbidden("dev routes are for the local developer (a direct loopback caller)")
    return caller


Caller = Annotated[Principal, Depends(admin)]
DispatchSchedule = Callable[[str], Awaitable[dict[str, Any]]]
ListReminders = Callable[[], Awaitable[list[ReminderRecord]]]
DispatchReminder = Callable[[str], Awaitable[dict[str, Any]]]
ListSchedules = Callable[[], Awaitable[list[dict[str, Any]]]]
Ident = Annotated[str, Path(min_length=1, max_length=200)]


def create_dev_router(
    *,
    prefix: str = "",
    dispatch_schedule: DispatchSchedule | None,
    list_reminders: ListReminders | None,
    dispatch_reminder: DispatchReminder | None,
    list_schedules: ListSchedules | None = None,
    tag: str = "dev",
) -> APIRouter:
    """The dev routes over plain callables (None: that feature is absent → 404)."""
    router = APIRouter(prefix=prefix, tags=[tag])

    @router.get("/v1/dev/schedules")
    async def schedules(caller: Caller) -> dict[str, Any]:
        """Every schedule: cron, `catchUp`, next and last slot, and the slots it missed."""
        items = await list_schedules() if list_schedules is not None else []
        return {"ok": True, "schedules": items}

    @router.post("/v1/dev/schedules/{schedule_id}")
    async def fire_schedule(schedule_id: Ident, caller: Caller) -> dict[str, Any]:
        """Dispatch one schedule now, exactly once: `{scheduleId, sessionIds}`."""
        if dispatch_schedule is None:
            raise NotFound(f"unknown schedule {schedule_id!r}")
        return await dispatch_schedule(schedule_id)

    @router.get("/v1/dev/reminders")
    async def reminders(caller: Caller) -> dict[str, Any]:
        """Every stored reminder, active or not."""
        items = await list_reminders() if list_reminders is not None else []
        return {"ok": True, "reminders": [r.to_dict() for r in items]}

    @router.post("/v1/dev/reminders/{reminder_id}")
    async def fire_reminder(reminder_id: Ident, caller: Caller) -> dict[str, Any]:
        """Fire one reminder now (404 unknown, 409 inactive or its session busy)."""
        if dispatch_reminder is None:
            raise NotFound(f"unknown reminder {reminder_id!r}")
        result = await dispatch_reminder(reminder_id)
        return {"ok": True, **result}

    return router


def dev_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    """The dev routes of one mounted agent, wired to `mount.host`.

    The host may offer `DispatchesSchedules`, `ListsSchedules` and `KeepsReminders`; what
    it lacks is absent: an empty list, or 404 for the one to fire.
    """
    host = mount.host
    reminders = host.reminders if isinstance(host, KeepsReminders) else None
    return create_dev_router(
        prefix=options.base_path(mount.slug),
        dispatch_schedule=host.dispatch_schedule if isinstance(host, DispatchesSchedules) else None,
        list_reminders=reminders.list if reminders is not None else None,
        dispatch_reminder=reminders.dispatch_reminder if reminders is not None else None,
        list_schedules=host.list_schedules if isinstance(host, ListsSchedules) else None,
        tag=f"{mount.slug}: dev",
    )
