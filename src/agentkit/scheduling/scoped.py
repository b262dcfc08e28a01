"""`host.reminders` as tools see it: narrowed to the principal of the calling session.

Tools run on input a model or a caller chose, so the reminder API they get must not reach
other principals' conversations. `SessionReminders` wraps the host's `ReminderService`:

- `create` records the session's principal on the reminder and refuses a conversation
  that principal does not own (and a `session_id` other than the one the key names);
  `channel_id` and `continuation_token` default to the calling session's own;
- `list`, `get` and `cancel` see only reminders created for that principal; anyone
  else's reminder looks like one that does not exist.

Code with no session (a direct tool call without `sessionId`) gets a view that holds and
creates nothing. Schedule handlers get a view bound to the schedule's own principal.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentkit.authoring.contexts import SessionInfo
from agentkit.errors import BadRequest, Forbidden
from agentkit.reminders import ReminderRecord


class ReminderService(Protocol):
    """What the scoped view uses of the host's `reminders.ReminderService`."""

    @property
    def timers_enabled(self) -> bool: ...

    async def create(self, **options: Any) -> ReminderRecord: ...

    async def list(self, *, active_only: bool = False) -> list[ReminderRecord]: ...

    async def get(self, reminder_id: str) -> ReminderRecord | None: ...

    async def cancel(self, reminder_id: str) -> bool: ...


__all__ = ["SessionReminders"]

# Keywords only the host may set: who the reminder acts for.
_HOST_ONLY = ("principal", "created_in")


class SessionReminders:
    """Reminders narrowed to one principal (and, for tools, to the session calling)."""

    def __init__(
        self,
        service: ReminderService,
        *,
        principal: str | None,
        session: SessionInfo | None = None,
    ) -> None:
        self._service = service
        self._principal = principal
        self._session = session

    @property
    def principal(self) -> str | None:
        """Whose reminders this view holds (None: nobody's)."""
        return self._principal

    @property
    def timers_enabled(self) -> bool:
        return self._service.timers_enabled

    async def create(self, **options: Any) -> ReminderRecord:
        """Create a reminder in a conversation this principal owns (by default the calling
        session). `Forbidden` for anyone else's conversation; `BadRequest` for bad options
        and where the limits say no."""
        for name in _HOST_ONLY:
            if name in options:
                raise BadRequest(f"invalid reminder options: {name!r} is set by the host")
        if self._principal is None:
            raise Forbidden(
                "reminders can only be created from inside a session", code="reminder_forbidden"
            )
        session = self._session
        if session is not None:
            options.setdefault("channel_id", session.channel_id)
            if session.continuation_key is not None:
                options.setdefault("continuation_token", session.continuation_key)
        return await self._service.create(
            **options,
            principal=self._principal,
            created_in=session.id if session is not None else None,
        )

    async def list(self, *, active_only: bool = False) -> list[ReminderRecord]:
        """This principal's reminders (or only the active ones)."""
        if self._principal is None:
            return []
        found = await self._service.list(active_only=active_only)
        return [r for r in found if r.principal == self._principal]

    async def get(self, reminder_id: str) -> ReminderRecord | None:
        """One of this principal's reminders; None for a missing one or anyone else's."""
        record = await self._service.get(reminder_id)
        if record is None or self._principal is None or record.principal != self._principal:
            return None
        return record

    async def cancel(self, reminder_id: str) -> bool:
        """Cancel one of this principal's reminders. False when it does not exist, is no
        longer active or belongs to someone else (the same answer, so ids cannot be probed)."""
        if await self.get(reminder_id) is None:
            return False
        return await self._service.cancel(reminder_id)
