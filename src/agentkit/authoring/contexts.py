"""The typed contexts handed to tools, hooks, schedules and reminders.

Host services (`reminders`, `mcp`) are `None` where the host does not provide them, so
user code can say what it needs ("Reminders are disabled on this host.").
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Read-only facts about the session a tool, hook or reminder runs in."""

    id: str
    channel_id: str
    mode: Literal["chat", "task"] = "chat"
    principal: str | None = None
    continuation_key: str | None = None
    abs: Mapping[str, str] = field(default_factory=dict)  # A/B arms: {experiment: variant}


class Reminders(Protocol):
    """`host.reminders`: create, list, get and cancel reminders (see scheduling)."""

    async def create(self, **options: Any) -> Any: ...
    async def list(self) -> list[Any]: ...
    async def get(self, reminder_id: str) -> Any: ...
    async def cancel(self, reminder_id: str) -> bool: ...


class McpClient(Protocol):
    """`host.mcp`: call tools on the agent's MCP connections."""

    async def call_tool(self, connection: str, tool: str, arguments: Mapping[str, Any]) -> Any: ...
    async def list_tools(self, connection: str) -> list[dict[str, Any]]: ...


@dataclass(slots=True)
class HostServices:
    """Shared services of the host. Channel packs (slack, github) attach as extras."""

    reminders: Reminders | None = None
    mcp: McpClient | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("agentkit.user"))
    extras: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.extras[name]
        except KeyError:
            raise AttributeError(name) from None

    def for_session(self, session: SessionInfo | None) -> HostServices:
        """These services as code running in `session` may use them: `reminders` narrowed
        to the session's principal (see scheduling). Already narrowed services stay as
        they are, so a narrowed view can never be widened again."""
        scope = getattr(self.reminders, "for_session", None)
        if not callable(scope):
            return self
        return self._with_reminders(scope(session))

    def for_principal(self, principal: str) -> HostServices:
        """These services as code acting for `principal` outside any one session may use
        them (a channel's route handlers): `reminders` narrowed to that principal's.
        Already narrowed services stay as they are."""
        scope = getattr(self.reminders, "for_principal", None)
        if not callable(scope):
            return self
        return self._with_reminders(scope(principal))

    def _with_reminders(self, reminders: Reminders) -> HostServices:
        return HostServices(
            reminders=reminders, mcp=self.mcp, logger=self.logger, extras=self.extras
        )


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a server tool receives beside its input."""

    session: SessionInfo | None
    host: HostServices
    call_id: str
    tool_name: str
    workdir: Path  # a per-call working folder
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the turn is interrupted (a stop or a follow-up): finish up or return early;
    after the agent's `stop_grace` seconds the call is cancelled (a sync tool's thread is
    abandoned, its result discarded)."""

    def __post_init__(self) -> None:
        # A tool only ever sees the host's services narrowed to its own session: a tool
        # driven by one principal must not list, cancel or aim reminders at another's.
        object.__setattr__(self, "host", self.host.for_session(self.session))

    @property
    def logger(self) -> logging.Logger:
        return self.host.logger

    @property
    def idempotency_key(self) -> str:
        """A key for this one call, to pass to an external API that takes one (Stripe,
        GitHub, most payment APIs), so that running the call again cannot repeat its
        effect. It depends only on the session and the call id, which is recorded before
        the call starts, so it is the same in every process that runs this call: after a
        crash, a restart or a Lambda retry."""
        scope = self.session.id if self.session is not None else "direct"
        raw = f"{scope}\0{self.call_id}".encode("utf-8", "surrogatepass")
        return "agentkit-" + hashlib.sha256(raw).hexdigest()[:40]


@dataclass(frozen=True, slots=True)
class HookContext:
    """What a hook handler receives beside the event: read-only session facts."""

    session: SessionInfo
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("agentkit.hooks"))


@dataclass(frozen=True, slots=True)
class ScheduleContext:
    """What a schedule `run` handler receives.

    `receive(channel, message=..., auth=...)` hands a message into a channel;
    `call_tool(name, input)` runs a server tool deterministically; `wait_until(aw)` keeps
    the firing alive until `aw` settles; `app_auth` is the schedule-scoped principal.
    """

    schedule_id: str
    receive: Callable[..., Awaitable[Any]]
    call_tool: Callable[[str, Mapping[str, Any]], Awaitable[Any]]
    wait_until: Callable[[Awaitable[Any]], None]
    app_auth: str
    host: HostServices


@dataclass(frozen=True, slots=True)
class ReminderTick:
    """What a reminder `run` handler receives on each tick."""

    reminder_id: str
    fire_count: int
    followup: Callable[..., Awaitable[Any]]
    host: HostServices
