"""`AgentRuntime`: the engine behind every surface (implements `AgentService`).

It composes collaborators that take only what they use: `ports.SessionPorts`,
`agent_parts.AgentParts`, `session_reads.SessionReads`; accepting messages is
`engine.accepting`, a turn `engine.turn.run` (under the session's lease: a turn dispatched
twice runs once), stopping `engine.settling`, recovery `engine.recovery`, approval
decisions `engine.approvals`, the sweep `engine.sweeper`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentkit.authoring.ab import AbDefinition
from agentkit.authoring.contexts import HostServices
from agentkit.engine import accepting, session_controls, session_reads
from agentkit.engine import approvals as decisions
from agentkit.engine.agent_parts import AgentParts, Bundle
from agentkit.engine.approvals import run_decided_by
from agentkit.engine.dispatch import Dispatcher, LocalDispatcher
from agentkit.engine.fanout import Fanout
from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.local_turns import LocalTurns
from agentkit.engine.ports import SessionPorts
from agentkit.engine.recovery import recover_all
from agentkit.engine.session_reads import SessionReads
from agentkit.engine.settling import stop_turn
from agentkit.engine.tails import SessionTails
from agentkit.engine.tools.reconcile import Reconciler
from agentkit.engine.tools.workspace import default_state_root, seed, write_files
from agentkit.engine.turn.recorder import Recorder
from agentkit.engine.turn.run import run_turn
from agentkit.events import Event, EventDraft
from agentkit.models import resolve_model
from agentkit.models.base import Model
from agentkit.project.manifest import Manifest
from agentkit.sessions import Principal, SessionRecord
from agentkit.store.base import ClaimStore, SessionFolders, Store

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
        self.turns = LocalTurns()  # the turns running in this process, their stops, streams
        self.ports = SessionPorts(
            store, dispatcher or LocalDispatcher(self), fanout, lease_ttl, self.turns
        )
        self.host = host_services or HostServices()
        self._model_resolver = model_resolver
        self.reads = SessionReads(store)  # ownership checks and reads on a caller's behalf
        # One shared reader per followed session, whatever its number of stream followers.
        self.tails = SessionTails(store)
        # A store with folders of its own keeps the workspaces; others get one from us.
        self._folders = store if isinstance(store, SessionFolders) else None
        self.state_root = state_root or default_state_root(self._folders)
        # By default long enough for running tools' stop grace and the turn's ending.
        stop_grace = bundle.manifest.agent.stop_grace
        self.settle_timeout = (
            max(5.0, stop_grace + 3.0) if settle_timeout is None else settle_timeout
        )
        # The bundle's tools, model, prompt and experiments: replaced whole on reload.
        self.parts = AgentParts(bundle, model_resolver)
        self.ports.in_doubt = Reconciler(self)  # a lost turn's calls in doubt, settled
        self.ports.agent_name = lambda: self.parts.manifest.agent.name
        self._direct: DirectCalls | None = None
        # A/B: the variants paused by a guardrail (the `ab` package keeps this current;
        # new sessions skip paused variants).
        self.ab_paused: Callable[[], Awaitable[Mapping[str, Collection[str]]]] = _none_paused
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
    def switch(self) -> PauseSwitch | None:
        """The agent's kill switch (hosts plug it into `ports.switch`)."""
        return self.ports.switch

    @property
    def claims(self) -> ClaimStore:
        """Where idempotency records are kept: the store (`service.KeepsClaims`)."""
        return self.ports.store

    @property
    def lease_ttl(self) -> float:
        return self.ports.lease_ttl

    @lease_ttl.setter
    def lease_ttl(self, ttl: float) -> None:
        self.ports.lease_ttl = ttl

    # ---- the bundle, the workspaces, recording --------------------------------------

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
        return self.state_root / "sessions" / session_id / "workspace"

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

    # Defined once, with their public signatures, in `engine.accepting`; bound here, the
    # runtime is their `Inbox`.
    start_session = accepting.start_session
    follow_up = accepting.follow_up
    follow_up_by_key = accepting.follow_up_by_key
    deliver = accepting.deliver

    # Written once, with their public signatures, in `engine.session_controls`.
    fork = session_controls.fork
    pause = session_controls.pause
    resume = session_controls.resume
    kill = session_controls.kill

    async def interrupt(self, session_id: str, turn_id: str | None = None) -> None:
        """Ask the session's running turn (`turn_id` only, when given) to stop."""
        await self.ports.interrupt(session_id, turn_id)

    async def stop(self, session_id: str, *, principal: Principal) -> bool:
        """Interrupt the running (or parked) turn; False when nothing was running."""
        return await stop_turn(self.ports, await self.reads.owned(session_id, principal))

    # Written once, with their public signatures, in `engine.session_reads`.
    get_session = session_reads.get_session
    session_by_key = session_reads.session_by_key
    list_sessions = session_reads.list_sessions
    session_status = session_reads.session_status
    session_cost = session_reads.session_cost
    read_events = session_reads.read_events
    follow_events = session_reads.follow_events
    subscribe_events = session_reads.subscribe_events

    # ---- approvals and direct tool calls -------------------------------------------

    # Written once, with their public signatures, in `engine.approvals`.
    approvals = decisions.approvals
    resolve_approval = decisions.resolve_approval
    call_tool = decisions.call_tool

    # ---- turns and recovery --------------------------------------------------------

    async def run_turn(
        self, session_id: str, turn_id: str, deadline: Deadline | None = None
    ) -> None:
        """Run or resume one turn (a second dispatch of it does nothing) until `deadline`,
        the end of the host's invocation (None locally: never continued)."""
        await run_turn(self.ports, self, session_id, turn_id, deadline)

    async def recover(self) -> None:
        """End turns whose process died; resume decided approvals; keep parked ones."""
        await recover_all(self.ports)

    async def sweep(self, *, idle_for: float | None = None) -> int:
        """Dispatch or fail open turns nobody works on (see `engine.sweeper`)."""
        from agentkit.engine.budget_timeout import BudgetExpiry
        from agentkit.engine.sweeper import sweep

        expire = BudgetExpiry(
            self.ports, lambda: self.manifest.agent.options, self.clock, run_decided_by(self)
        )
        return await sweep(self.ports, self.session_status, expire, idle_for=idle_for)


async def _none_paused() -> Mapping[str, Collection[str]]:
    return {}


__all__ = ["AgentRuntime", "Bundle"]
