"""`AgentRuntime`: the engine behind every surface (implements `AgentService`).

Sessions are created and continued here; turns run through the dispatcher (asyncio tasks
locally, an asynchronous Lambda invocation on AWS) into `run_turn`, which takes the
session's turn lease so a turn dispatched twice runs once. All state a restart needs is in
the events: `recover()` ends turns whose process died and leaves parked approvals
resolvable. The runtime composes; the work is done by collaborators that take only what
they use (`ports.SessionPorts`, `agent_parts.AgentParts`): accepting messages in
`engine.accepting`, running a turn in `engine.turn.run`, settling in `engine.settling`,
recovery in `engine.recovery`, approval decisions in `engine.approvals`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.authoring.ab import AbDefinition
from agentkit.authoring.contexts import HostServices
from agentkit.engine import accepting, pausing
from agentkit.engine.agent_parts import AgentParts, Bundle
from agentkit.engine.approvals import record_decision
from agentkit.engine.dispatch import Dispatcher, LocalDispatcher
from agentkit.engine.fanout import Fanout
from agentkit.engine.folds.conversation import open_turns
from agentkit.engine.folds.pending_approvals import pending_approvals
from agentkit.engine.local_turns import LocalTurns
from agentkit.engine.on_busy import OnBusy
from agentkit.engine.pausing import PauseOutcome, refuse_paused
from agentkit.engine.ports import SessionPorts
from agentkit.engine.recovery import recover_all
from agentkit.engine.service import Accepted, Decision, PendingApproval, ToolCallOutcome
from agentkit.engine.settling import abandon_parked
from agentkit.engine.tools.workspace import seed, write_files
from agentkit.engine.turn.recorder import Recorder
from agentkit.engine.turn.run import run_turn
from agentkit.errors import BadRequest, Forbidden, InvalidId, NotFound, SessionNotFound
from agentkit.events import Event, EventDraft
from agentkit.models import resolve_model
from agentkit.models.base import Model
from agentkit.project.manifest import Manifest
from agentkit.sessions import (
    Mode,
    Principal,
    SessionRecord,
    SessionStatus,
    fold_status,
    fold_status_tail,
    validate_session_id,
)
from agentkit.store.base import Page, SessionFolders, Store

if TYPE_CHECKING:
    # The turn machinery (tool table, model loop, direct tool calls) is imported when a
    # turn or tool call first needs it: a process that only accepts requests and hands
    # turns to another function (the API function on Lambda) never loads it.
    from agentkit.engine.tools.calls import ToolEntry, ToolProvider
    from agentkit.engine.tools.direct import DirectCalls
    from agentkit.engine.turn.deadline import Deadline


class AgentRuntime:
    """One agent's sessions and turns over a `Store`.

    `lease_ttl` bounds how long a dead process can block a session; a running turn renews
    its lease every third of it. `settle_timeout` bounds how long a follow-up waits for an
    interrupted turn to end before answering `session_busy` (by default the larger of 5 s
    and the agent's `stop_grace` + 3 s).
    """

    def __init__(
        self,
        bundle: Bundle,
        store: Store,
        *,
        dispatcher: Dispatcher | None = None,
        fanout: Fanout | None = None,
        host_services: HostServices | None = None,
        model_resolver: Callable[[str | None], Model] = resolve_model,
        state_root: Path | None = None,
        lease_ttl: float = 60.0,
        settle_timeout: float | None = None,
    ) -> None:
        self.bundle = bundle
        # The turns running in this process, their stops and model streams.
        self.turns = LocalTurns()
        self.ports = SessionPorts(
            store, dispatcher or LocalDispatcher(self), fanout, lease_ttl, self.turns
        )
        self.host = host_services or HostServices()
        self._model_resolver = model_resolver
        # A store with folders of its own keeps the workspaces; others get one from us.
        self._folders = store if isinstance(store, SessionFolders) else None
        self.state_root = state_root or (
            self._folders.root
            if self._folders is not None
            else Path(tempfile.mkdtemp(prefix="agentkit-"))
        )
        # By default long enough for running tools' stop grace and the turn's ending.
        self.settle_timeout = (
            settle_timeout
            if settle_timeout is not None
            else max(5.0, bundle.manifest.agent.stop_grace + 3.0)
        )
        # The bundle's tools, model, prompt and experiments: replaced whole on reload.
        self.parts = AgentParts(bundle, model_resolver)
        self._workspaces: dict[tuple[Path, str], Path] = {}  # see `workspace`
        self._direct: DirectCalls | None = None
        # A/B: the variants paused by a guardrail (the `ab` package keeps this current;
        # new sessions skip paused variants).
        self.ab_paused: Callable[[], Awaitable[Mapping[str, Collection[str]]]] = _none_paused
        self._costs: dict[str, tuple[int, float | None]] = {}  # session -> (read up to, cost)
        # Tools from outside the project (MCP connections), composed in by the host.
        self.tool_providers: list[ToolProvider] = []
        # Wall clock for a turn's overall limit (`max_turn_seconds`); tests inject one.
        self.clock: Callable[[], float] = time.time

    # ---- the ports (hosts and tests may swap them after construction) --------------

    @property
    def store(self) -> Store:
        return self.ports.store

    @property
    def dispatcher(self) -> Dispatcher:
        return self.ports.dispatcher

    @dispatcher.setter
    def dispatcher(self, dispatcher: Dispatcher) -> None:
        self.ports.dispatcher = dispatcher

    @property
    def fanout(self) -> Fanout | None:
        return self.ports.fanout

    @fanout.setter
    def fanout(self, fanout: Fanout | None) -> None:
        self.ports.fanout = fanout

    @property
    def lease_ttl(self) -> float:
        return self.ports.lease_ttl

    @lease_ttl.setter
    def lease_ttl(self, ttl: float) -> None:
        self.ports.lease_ttl = ttl

    # ---- the bundle ----------------------------------------------------------------

    @property
    def manifest(self) -> Manifest:
        return self.bundle.manifest

    @property
    def model_resolver(self) -> Callable[[str | None], Model]:
        """Turns a model id into a `Model` (the agent's, subagents', A/B variants')."""
        return self._model_resolver

    @model_resolver.setter
    def model_resolver(self, resolver: Callable[[str | None], Model]) -> None:
        self._model_resolver = resolver
        self.parts = AgentParts(self.bundle, resolver)  # the model is resolved anew

    def use_bundle(self, bundle: Bundle) -> None:
        """Run new turns on `bundle` (a reloaded agent folder). A running turn keeps the
        parts it took when it started, so it finishes on the code it began with."""
        self.bundle = bundle
        self.parts = AgentParts(bundle, self.model_resolver)

    @property
    def direct(self) -> DirectCalls:
        """Tool calls made over the API, outside any model turn."""
        if self._direct is None:
            from agentkit.engine.tools.direct import DirectCalls

            self._direct = DirectCalls(self.ports, self)
        return self._direct

    @property
    def tools(self) -> dict[str, ToolEntry]:
        """The tool table (user tools imported on first use), built-ins included."""
        return self.parts.tools

    async def turn_tools(self) -> dict[str, ToolEntry]:
        """The tool table of one turn: `tools` plus the providers' (project names win)."""
        return await self.parts.turn_tools(self.tool_providers)

    def model(self) -> Model:
        """The agent's model, resolved on first use (`ModelError` when it cannot be)."""
        return self.parts.model()

    @property
    def experiments(self) -> dict[str, AbDefinition]:
        """The agent's A/B experiments by name."""
        return self.parts.experiments

    def workspace(self, session_id: str) -> Path:
        """The session's workspace folder (the store's, when it keeps one)."""
        if self._folders is not None:
            return self._folders.workspace_dir(session_id)
        key = (self.state_root, session_id)  # the path depends on nothing else
        path = self._workspaces.get(key)
        if path is None:
            if len(self._workspaces) >= 1024:
                self._workspaces.clear()
            path = self._workspaces[key] = self.state_root / "sessions" / session_id / "workspace"
        return path

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None:
        workspace = self.workspace(session_id)
        seed(workspace, self.manifest, self.bundle.sandbox_dir, self.bundle.root)
        if files:
            write_files(workspace, files)

    def recorder(
        self, record: SessionRecord, turn_id: str | None = None, lease_holder: str | None = None
    ) -> Recorder:
        return self.ports.recorder(record, turn_id, lease_holder)

    async def record(self, record: SessionRecord, drafts: list[EventDraft]) -> list[Event]:
        """Append drafts durably, then publish them: the single recording path."""
        return await self.ports.record(record, drafts)

    # ---- sessions ------------------------------------------------------------------

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
        """Create a session, record `session.started` and the message, dispatch the turn."""
        return await accepting.start_session(
            self,
            message,
            principal=principal,
            channel_id=channel_id,
            mode=mode,
            continuation_key=continuation_key,
            workspace_files=workspace_files,
            source=source,
        )

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
        """Continue a chat session; a busy turn is interrupted first (bounded wait), or
        the message is queued behind it or rejected (`on_busy`, see `engine.on_busy`)."""
        record = await self._owned(session_id, principal)
        return await accepting.follow_up(
            self,
            record,
            continuation_token,
            message,
            principal=principal,
            workspace_files=workspace_files,
            source=source,
            on_busy=on_busy,
        )

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
        """Continue the session a channel key points at (reminders, schedules and channels).

        For the HTTP channel the key is the session's conversation key, `session:<id>` (see
        `conversation_key`): it names the session but is never its continuation token.
        """
        return await accepting.follow_up_by_key(
            self,
            channel_id,
            continuation_key,
            message,
            principal=principal,
            source=source,
            on_busy=on_busy,
        )

    async def deliver(self, session_id: str, message: str, *, source: str = "reminder") -> Accepted:
        """Send a message into a session by id, as its owner, with no token (trusted callers:
        reminders). Same rules as a follow-up otherwise; the HTTP token is not rotated."""
        return await accepting.deliver(self, session_id, message, source=source)

    async def interrupt(self, session_id: str, turn_id: str | None = None) -> None:
        """Ask the session's running turn (`turn_id` only, when given) to stop at its next
        safe point."""
        await self.ports.interrupt(session_id, turn_id)

    async def stop(self, session_id: str, *, principal: Principal) -> bool:
        """Interrupt the running (or parked) turn; False when nothing was running."""
        record = await self._owned(session_id, principal)
        events = await self.store.read(record.id)
        status = fold_status(events)
        if status == SessionStatus.AWAITING_APPROVAL:
            # A turn decided meanwhile resumes and runs its approved calls, then stops.
            for turn_id in await abandon_parked(self.ports, record, events):
                await self.interrupt(record.id, turn_id)
            return True
        if status != SessionStatus.RUNNING and await self.store.get_lease(record.id) is None:
            return False
        turns = open_turns(events)
        await self.interrupt(record.id, turns[-1] if turns else None)
        return True

    async def pause(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """Pause the session: its turn stops at its next step boundary (`engine.pausing`)."""
        return await pausing.pause(self.ports, await self._owned(session_id, principal), principal)

    async def resume(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """Let a paused session take messages and decisions again."""
        return await pausing.resume(self.ports, await self._owned(session_id, principal), principal)

    async def kill(self, session_id: str, *, principal: Principal) -> PauseOutcome:
        """End the session for good (`session.failed`, reason `killed`)."""
        record = await self._owned(session_id, principal)
        return await pausing.kill(self.ports, record, principal, self.settle_timeout)

    async def get_session(self, session_id: str, *, principal: Principal) -> SessionRecord:
        return await self._owned(session_id, principal)

    async def list_sessions(
        self, *, principal: Principal, limit: int = 50, cursor: str | None = None
    ) -> Page:
        owner = None if principal.admin else principal.id
        return await self.store.list_sessions(owner, limit=limit, cursor=cursor)

    async def session_status(self, session_id: str) -> SessionStatus | None:
        """A listed session's status, folded from the tail of its events; None when it is
        gone. No ownership check: for callers that already hold the record (a listing)."""
        try:
            length = await self.store.next_index(session_id)

            async def read(start: int, limit: int) -> list[Event]:
                return await self.store.read(session_id, start, limit)

            return await fold_status_tail(read, length)
        except (SessionNotFound, InvalidId):
            return None

    async def session_cost(self, session_id: str) -> float | None:
        """The dollars a listed session's turns cost so far (None when a price was unknown
        or the session is gone). Folded incrementally: each call reads only new events."""
        from agentkit.engine.folds.session_cost import session_cost

        try:
            return await session_cost(self.store, session_id, self._costs)
        except (SessionNotFound, InvalidId):
            return None

    async def read_events(
        self, session_id: str, *, principal: Principal, start: int = 0
    ) -> list[Event]:
        await self._owned(session_id, principal)
        return await self.store.read(session_id, start)

    async def follow_events(
        self, session_id: str, *, principal: Principal, start: int, timeout: float
    ) -> list[Event]:
        await self._owned(session_id, principal)
        return await self.store.follow(session_id, start, timeout)

    async def _owned(self, session_id: str, principal: Principal) -> SessionRecord:
        try:
            validate_session_id(session_id)
            record = await self.store.get_session(session_id)
        except InvalidId:
            raise NotFound(f"no session {session_id[:80]!r}", code="session_not_found") from None
        if record is None:
            raise NotFound(f"no session {session_id!r}", code="session_not_found")
        if not principal.owns(record):
            raise Forbidden("not the owner of this session")
        return record

    # ---- approvals -----------------------------------------------------------------

    async def approvals(self, session_id: str, *, principal: Principal) -> list[PendingApproval]:
        await self._owned(session_id, principal)
        return pending_approvals(await self.store.read(session_id))

    async def resolve_approval(
        self, session_id: str, call_id: str, decision: Decision, *, principal: Principal
    ) -> None:
        """Record the decision (bound to the call's arguments) and resume the turn."""
        if decision not in ("approve", "deny"):
            raise BadRequest("decision must be 'approve' or 'deny'")
        record = await self._owned(session_id, principal)
        refuse_paused(await self.store.read(record.id))
        await record_decision(self.ports, record, call_id, decision, principal, self._run_decided)

    # ---- direct tool calls ---------------------------------------------------------

    async def call_tool(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        principal: Principal,
        session_id: str | None = None,
    ) -> ToolCallOutcome:
        """Run a server tool with no model turn (recorded on the session when given)."""
        record = await self._owned(session_id, principal) if session_id is not None else None
        return await self.direct.call(tool_name, tool_input, record)

    # ---- turns ---------------------------------------------------------------------

    async def _run_decided(self, *args: Any) -> None:
        await self.direct.run_decided(*args)  # built only when a parked direct call is decided

    # ---- turns and recovery --------------------------------------------------------

    async def run_turn(
        self, session_id: str, turn_id: str, deadline: Deadline | None = None
    ) -> None:
        """Run or resume one turn. A second dispatch of the same turn does nothing.

        `deadline` is the end of the host's invocation (None locally: never continued)."""
        await run_turn(self.ports, self, session_id, turn_id, deadline)

    async def recover(self) -> None:
        """End turns whose process died; resume decided approvals; keep parked ones."""
        await recover_all(self.ports)

    async def sweep(self, *, idle_for: float | None = None) -> int:
        """Dispatch or fail open turns nobody works on (see `engine.sweeper`)."""
        from agentkit.engine.budget_timeout import expire_budget_approvals
        from agentkit.engine.sweeper import sweep

        async def expire(record: SessionRecord) -> int:
            options = self.manifest.agent.options
            return await expire_budget_approvals(
                self.ports, record, options, self.clock, self._run_decided
            )

        return await sweep(self.ports, self.session_status, expire, idle_for=idle_for)


async def _none_paused() -> Mapping[str, Collection[str]]:
    return {}


__all__ = ["AgentRuntime", "Bundle"]
