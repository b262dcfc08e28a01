"""The `AgentService` port: what the HTTP API, channels, MCP, schedules and Lambda
handlers ask of the engine. Surfaces never touch the store or the turn loop directly.

Errors are raised as `HttpError` subclasses from `agentkit.errors` so every surface maps
them the same way: `NotFound` (unknown session, tool or approval), `Forbidden` (not the
owner), `Conflict` with code `stale_token`, `session_busy` or `not_followable`, and
`BadRequest` (schema-invalid tool input, agent-execution tool called on the host).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.authoring.ab import AbDefinition
from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.tails import Subscription
from agentkit.events import Event
from agentkit.project.manifest import Manifest
from agentkit.sessions import Mode, Principal, SessionRecord, SessionStatus
from agentkit.store.base import ClaimStore, Page
from agentkit.store.listing import StartedWindow


@dataclass(frozen=True, slots=True)
class Accepted:
    """A message was accepted; the turn runs in the background."""

    session_id: str
    continuation_token: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class Forked:
    """A session was forked: the new session's id and its HTTP continuation token."""

    session_id: str
    continuation_token: str
    from_session_id: str
    at_index: int


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    tool_name: str
    call_id: str
    is_error: bool
    result: Any
    duration_ms: int
    # True when the call was parked for approval on its session and has not run yet.
    pending_approval: bool = False


@dataclass(frozen=True, slots=True)
class PendingApproval:
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    turn_id: str | None
    requested_at: str


PauseStatus = Literal["running", "paused", "killed"]


@dataclass(frozen=True, slots=True)
class PauseOutcome:
    """What a pause, resume or kill found and did (`changed`: it recorded something)."""

    status: PauseStatus
    changed: bool


Decision = Literal["approve", "deny"]
OnBusy = Literal["interrupt", "queue", "reject"]


class AgentService(Protocol):
    """One agent's sessions, as every surface sees them."""

    @property
    def manifest(self) -> Manifest: ...

    @property
    def experiments(self) -> dict[str, AbDefinition]:
        """The agent's A/B experiments by name (empty when it has none)."""
        ...

    @property
    def switch(self) -> PauseSwitch | None:
        """The agent's kill switch (`engine.fleet_switch`), None when the host has none."""
        ...

    async def start_session(
        self,
        message: str,
        *,
        principal: Principal,
        channel_id: str = "http",
        mode: Mode = "chat",
        continuation_key: str | None = None,
        workspace_files: Mapping[str, str] | None = None,
        source: str = "http",
    ) -> Accepted:
        """Create a session, record the message, dispatch its first turn."""
        ...

    async def follow_up(
        self,
        session_id: str,
        continuation_token: str,
        message: str,
        *,
        principal: Principal,
        workspace_files: Mapping[str, str] | None = None,
        source: str = "http",
        on_busy: OnBusy = "interrupt",
    ) -> Accepted:
        """Continue a chat session: interrupts a busy turn (bounded wait), rotates the token.
        `on_busy="queue"` runs the message after the current turn instead, `"reject"`
        answers `Conflict(session_busy)` while the session is busy."""
        ...

    async def follow_up_by_key(
        self,
        channel_id: str,
        continuation_key: str,
        message: str,
        *,
        principal: Principal,
        source: str = "channel",
        on_busy: OnBusy = "interrupt",
    ) -> Accepted:
        """Continue the session a channel-defined key points at (reminders, channels)."""
        ...

    async def fork(self, session_id: str, at_index: int, *, principal: Principal) -> Forked:
        """A new session whose history is a copy of events `0..at_index` of this one (the
        owner's only; `BadRequest` outside the stream). See `engine.forking`."""
        ...

    async def pause(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """Pause the session: its turn stops at its next step boundary (`engine.pausing`)."""
        ...

    async def resume(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """Let a paused session take messages and decisions again."""
        ...

    async def kill(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """End the session for good (`session.failed`, reason `killed`)."""
        ...

    async def stop(self, session_id: str, *, principal: Principal) -> bool:
        """Interrupt the running turn; False when nothing was running."""
        ...

    async def get_session(self, session_id: str, *, principal: Principal) -> SessionRecord: ...

    async def session_by_key(
        self, channel_id: str, key: str, *, principal: Principal
    ) -> SessionRecord | None:
        """The session a channel key names, or None; `Forbidden` when it is another's."""
        ...

    async def list_sessions(
        self,
        *,
        principal: Principal,
        limit: int = 50,
        cursor: str | None = None,
        owner: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        """The sessions `principal` may see, newest first: an admin's all (or `owner`'s),
        anyone else's own; `started` narrows them to a window of creation times."""
        ...

    async def session_status(self, session_id: str) -> SessionStatus | None:
        """A listed session's status folded from its events (cheaply: from the tail);
        None when the session is gone. The caller has checked ownership."""
        ...

    async def session_cost(self, session_id: str) -> float | None:
        """A listed session's cost so far in dollars; None when a price was unknown or the
        session is gone. The caller has checked ownership."""
        ...

    async def read_events(
        self, session_id: str, *, principal: Principal, start: int = 0
    ) -> list[Event]: ...

    async def follow_events(
        self, session_id: str, *, principal: Principal, start: int, timeout: float
    ) -> list[Event]:
        """Events from `start`, waiting up to `timeout` seconds for the first one."""
        ...

    async def subscribe_events(
        self, session_id: str, *, principal: Principal, start: int
    ) -> Subscription:
        """A live follower of the session's events from `start` (close it when done):
        every follower of one session shares one reader of the store."""
        ...

    async def approvals(
        self, session_id: str, *, principal: Principal
    ) -> list[PendingApproval]: ...

    async def resolve_approval(
        self, session_id: str, call_id: str, decision: Decision, *, principal: Principal
    ) -> None:
        """Record the decision and resume the parked turn."""
        ...

    async def call_tool(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        principal: Principal,
        session_id: str | None = None,
    ) -> ToolCallOutcome:
        """Run a server tool with no model turn (recorded on the session when given)."""
        ...

    async def run_turn(self, session_id: str, turn_id: str) -> None:
        """Run or resume one turn to its end. What a dispatcher (or TurnFunction) calls."""
        ...

    async def recover(self) -> None:
        """After a restart: end turns whose holder died as `turn.failed`, keep approvals."""
        ...


@runtime_checkable
class KeepsClaims(Protocol):
    """Optional, beside `AgentService`: a service whose store keeps claims, where the
    routes keep the answers of requests made with an `Idempotency-Key`
    (`engine.idempotency`). `AgentRuntime` is one; without it the header is ignored."""

    @property
    def claims(self) -> ClaimStore:
        """The claim role of the service's store."""
        ...
