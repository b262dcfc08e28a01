"""`AgentRuntime`: the engine behind every surface (implements `AgentService`).

Sessions are created and continued here; turns run through the dispatcher (asyncio tasks
locally, an asynchronous Lambda invocation on AWS) into `run_turn`, which takes the
session's turn lease so a turn dispatched twice runs once. All state a restart needs is in
the events: `recover()` ends turns whose process died and leaves parked approvals
resolvable. Running a turn lives in `engine.running`, settling and recovery in
`engine.lifecycle`, approval decisions in `engine.approvals`.
"""

from __future__ import annotations

import hmac
import secrets
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.authoring.ab import AbDefinition
from agentkit.authoring.contexts import HostServices
from agentkit.engine.agent_parts import AgentParts, Bundle
from agentkit.engine.approvals import pending_approvals, record_decision
from agentkit.engine.arms import enroll
from agentkit.engine.binding import agent_bound
from agentkit.engine.busy import OnBusy, accept_when_idle
from agentkit.engine.dispatch import Dispatcher, LocalDispatcher
from agentkit.engine.fanout import Fanout
from agentkit.engine.fold import open_turns
from agentkit.engine.lifecycle import (
    abandon_parked,
    end_undispatched,
    give_back_token,
    recover_all,
    settle,
)
from agentkit.engine.local_turns import LocalTurns, stop_key
from agentkit.engine.recorder import Recorder
from agentkit.engine.running import run_turn
from agentkit.engine.service import Accepted, Decision, PendingApproval, ToolCallOutcome
from agentkit.engine.workspace import check_files, check_fits, seed, write_files
from agentkit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidId,
    NotFound,
    SessionNotFound,
)
from agentkit.events import (
    Event,
    EventDraft,
    MessageReceived,
    SessionStarted,
    draft,
)
from agentkit.models import resolve_model
from agentkit.models.base import Model
from agentkit.project.manifest import Manifest
from agentkit.sessions import (
    HTTP_KEY_PREFIX,
    Mode,
    Principal,
    SessionRecord,
    SessionStatus,
    conversation_key,
    fold_status,
    fold_status_tail,
    hash_token,
    new_http_token,
    new_session_id,
    session_id_of_key,
    token_matches,
    validate_session_id,
)
from agentkit.store.base import Page, SessionFolders, Store

# Turns the agent starts itself, never counted against a caller's daily limit.
AGENT_OWN_SOURCES = frozenset({"schedule", "reminder", "cli"})

if TYPE_CHECKING:
    # The turn machinery (tool table, model loop, direct tool calls) is imported when a
    # turn or tool call first needs it: a process that only accepts requests and hands
    # turns to another function (the API function on Lambda) never loads it.
    from agentkit.engine.deadline import Deadline
    from agentkit.engine.direct import DirectCalls
    from agentkit.engine.tools import ToolEntry, ToolProvider


def new_turn_id() -> str:
    return "turn_" + secrets.token_urlsafe(12)


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
        self.store = store
        self.dispatcher: Dispatcher = dispatcher or LocalDispatcher(self)
        self.fanout = fanout
        self.host = host_services or HostServices()
        self._model_resolver = model_resolver
        # A store with folders of its own keeps the workspaces; others get one from us.
        self._folders = store if isinstance(store, SessionFolders) else None
        self.state_root = state_root or (
            self._folders.root
            if self._folders is not None
            else Path(tempfile.mkdtemp(prefix="agentkit-"))
        )
        self.lease_ttl = lease_ttl
        # By default long enough for running tools' stop grace and the turn's ending.
        self.settle_timeout = (
            settle_timeout
            if settle_timeout is not None
            else max(5.0, bundle.manifest.agent.stop_grace + 3.0)
        )
        # The bundle's tools, model, prompt and experiments: replaced whole on reload.
        self.parts = AgentParts(bundle, model_resolver)
        # The turns running in this process, their stops and model streams.
        self.turns = LocalTurns()
        # Session records seen by this process; only their immutable facts are used by turns.
        self._records: dict[str, SessionRecord] = {}
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

    # ---- facts ---------------------------------------------------------------------

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
        """Run new turns on `bundle` (a reloaded agent folder).

        A turn already running keeps the manifest, tools, model and prompt it took when it
        started (`engine.running` captures them), so it finishes on the code it began with.
        """
        self.bundle = bundle
        self.parts = AgentParts(bundle, self.model_resolver)

    @property
    def direct(self) -> DirectCalls:
        """Tool calls made over the API, outside any model turn."""
        if self._direct is None:
            from agentkit.engine.direct import DirectCalls

            self._direct = DirectCalls(self)
        return self._direct

    @property
    def tools(self) -> dict[str, ToolEntry]:
        """The tool table (user tools imported on first use), built-ins included."""
        return self.parts.tools

    async def turn_tools(self) -> dict[str, ToolEntry]:
        """The tool table of one turn: `tools` plus the providers' (project names win)."""
        return await self.parts.turn_tools(self.tool_providers)

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

    def model(self) -> Model:
        """The agent's model, resolved on first use (`ModelError` when it cannot be)."""
        return self.parts.model()

    def system_prompt(self) -> str:
        """The system prompt built from the manifest, on first use."""
        return self.parts.system_prompt()

    @property
    def experiments(self) -> dict[str, AbDefinition]:
        """The agent's A/B experiments by name."""
        return self.parts.experiments

    def recorder(
        self, record: SessionRecord, turn_id: str | None = None, lease_holder: str | None = None
    ) -> Recorder:
        return Recorder(self.store, record, self.fanout, turn_id, lease_holder)

    async def record(self, record: SessionRecord, drafts: list[EventDraft]) -> list[Event]:
        """Append drafts durably, then publish them: the single recording path."""
        return await self.recorder(record).append(drafts)

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
        files = check_files(workspace_files)
        await self._check_daily(principal, source)
        session_id = new_session_id()
        if files:
            # Written before the session exists, so files that cannot be written leave no
            # session behind (and no half-written workspace).
            try:
                self.prepare_workspace(session_id, files)
            except BadRequest:
                shutil.rmtree(self.workspace(session_id), ignore_errors=True)
                raise
        token = new_http_token()
        record = SessionRecord(
            id=session_id,
            channel_id=channel_id,
            mode=mode,
            principal=principal.id,
            token_hash=hash_token(token),
            continuation_key=continuation_key,
        )
        await self.store.create_session(record)
        self._remember(record)
        turn_id = new_turn_id()
        started = SessionStarted(
            channel_id=channel_id, mode=mode, principal=principal.id, agent=self.manifest.agent.slug
        )
        received = _received(message, principal, source, files)
        experiments = self.experiments
        paused = await self.ab_paused() if experiments else {}
        arms = enroll(experiments, record.id, principal.id, paused)
        bound = agent_bound(self.manifest, record.id)
        await self.record(
            record,
            [
                draft(started),
                *(draft(a) for a in arms),
                draft(received, turn_id=turn_id),
                draft(bound),
            ],
        )
        try:
            await self.dispatcher.dispatch(record.id, turn_id)
        except Exception as exc:
            # The caller gets an error, not the session: a turn it cannot follow must not
            # run later on its behalf. End it, as a follow-up's failed dispatch does.
            await end_undispatched(self, record, turn_id, exc)
            raise
        return Accepted(record.id, token, turn_id)

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
        the message is queued behind it or rejected (`on_busy`, see `engine.busy`)."""
        record = await self._owned(session_id, principal)
        if record.mode == "task":
            raise Conflict("task sessions do not accept follow-ups", code="not_followable")
        if _is_channel_key(record, continuation_token):
            # A channel's sessions are continued by the channel's own key (never rotated).
            return await self.follow_up_by_key(
                record.channel_id,
                continuation_token,
                message,
                principal=principal,
                source=source,
                on_busy=on_busy,
            )
        if not token_matches(continuation_token, record.token_hash):
            raise Conflict("the continuation token is stale or wrong", code="stale_token")
        files = check_files(workspace_files)
        await self._check_daily(principal, source)
        # Clashes with the workspace as it is are refused before the running turn is
        # interrupted for nothing (checked again, after seeding, when written).
        if files:
            check_fits(self.workspace(record.id), files)
        old_hash = record.token_hash
        if old_hash is None:
            raise Conflict("the continuation token is stale or wrong", code="stale_token")
        if on_busy != "interrupt":
            return await self._follow_up_when_idle(
                record, old_hash, message, principal, source, files, on_busy
            )
        # Only while the presented token is still current may this request interrupt: once
        # a concurrent follow-up with the same token has been accepted, the running turn is
        # that one's, and this request is the loser.
        await self._settle(record, token_hash=old_hash)
        token = new_http_token()
        new_hash = hash_token(token)
        if not await self.store.rotate_token(record.id, old_hash, new_hash):
            raise Conflict("another follow-up was accepted first", code="session_busy")
        try:
            if files:
                self.prepare_workspace(record.id, files)
            turn_id = await self._accept(record, message, principal, source, files)
        except BaseException:
            # The caller never learns the new token: give the old one back so it can retry
            # with it (only this request knows the new hash, so nobody else has used it).
            await give_back_token(self.store, record.id, new_hash, old_hash)
            raise
        return Accepted(record.id, token, turn_id)

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
        record = await self._find_by_key(channel_id, continuation_key)
        if record is None:
            raise NotFound(
                f"no session for {channel_id} key {continuation_key!r}", code="session_not_found"
            )
        if not principal.owns(record):
            raise Forbidden("not the owner of this session")
        if record.mode == "task":
            raise Conflict("task sessions do not accept follow-ups", code="not_followable")
        if on_busy != "interrupt":
            turn_id = await accept_when_idle(self, record, message, principal, source, on_busy)
            await self.store.touch_session(record.id)
            return Accepted(record.id, continuation_key, turn_id)
        await self._settle(record)
        await self.store.touch_session(record.id)
        turn_id = await self._accept(record, message, principal, source, {})
        return Accepted(record.id, continuation_key, turn_id)

    async def _check_daily(self, principal: Principal, source: str) -> None:
        """The per-principal daily limit of a caller, whatever the surface it came in by
        (HTTP, MCP, ...); 429 when spent. Schedules, reminders, the CLI and channels'
        own principals are the agent's own traffic, not a caller's."""
        if "budget" not in self.manifest.agent.options:
            return
        if source in AGENT_OWN_SOURCES or principal.id.startswith("channel:"):
            return
        from agentkit.costs import parse_budget
        from agentkit.engine.daily import check_daily

        budget = parse_budget(self.manifest.agent.options["budget"])
        await check_daily(self.store, budget, principal.id)

    async def _follow_up_when_idle(
        self,
        record: SessionRecord,
        old_hash: str,
        message: str,
        principal: Principal,
        source: str,
        files: dict[str, str],
        on_busy: OnBusy,
    ) -> Accepted:
        """An HTTP follow-up under `queue` or `reject`: the token rotates only once the
        message is sure to be kept."""
        token = new_http_token()
        new_hash = hash_token(token)

        async def rotate() -> None:
            if not await self.store.rotate_token(record.id, old_hash, new_hash):
                raise Conflict("another follow-up was accepted first", code="session_busy")
            if files:
                self.prepare_workspace(record.id, files)

        turn_id = await accept_when_idle(
            self, record, message, principal, source, on_busy, claim=rotate
        )
        return Accepted(record.id, token, turn_id)

    async def _find_by_key(self, channel_id: str, key: str) -> SessionRecord | None:
        record = await self.store.find_session(channel_id, key)
        session_id = session_id_of_key(channel_id, key)
        if record is None and session_id is not None:
            found = await self.store.get_session(session_id)
            # Only a session that key really names: an HTTP one without a key of its own.
            if found is not None and conversation_key(found) == HTTP_KEY_PREFIX + found.id:
                record = found
        return record

    async def deliver(self, session_id: str, message: str, *, source: str = "reminder") -> Accepted:
        """Send a message into a session by id, as its owner, with no token (trusted callers:
        reminders). Same rules as a follow-up otherwise; the HTTP token is not rotated."""
        try:
            record = await self.store.get_session(validate_session_id(session_id))
        except InvalidId:
            record = None
        if record is None:
            raise NotFound(f"no session {session_id[:80]!r}", code="session_not_found")
        if record.mode == "task":
            raise Conflict("task sessions do not accept follow-ups", code="not_followable")
        await self._settle(record)
        await self.store.touch_session(record.id)
        owner = Principal(record.principal or "system")
        turn_id = await self._accept(record, message, owner, source, {})
        return Accepted(record.id, record.continuation_key or "", turn_id)

    async def _accept(
        self,
        record: SessionRecord,
        message: str,
        principal: Principal,
        source: str,
        files: dict[str, str],
    ) -> str:
        """Record the message and dispatch its turn; `files` are already written."""
        # A stop asked for before this message was meant for an earlier turn; one asked for
        # from now on is meant for this one.
        self.turns.forget_stop(record.id)
        await self.store.set_interrupt(record.id, False)
        turn_id = new_turn_id()
        await self.record(
            record, [draft(_received(message, principal, source, files), turn_id=turn_id)]
        )
        try:
            await self.dispatcher.dispatch(record.id, turn_id)
        except Exception as exc:
            # The message is recorded but nothing will run its turn: end it now, so the
            # session is not left running (the sweeper re-dispatches it if this fails too).
            await end_undispatched(self, record, turn_id, exc)
            raise
        return turn_id

    async def _settle(self, record: SessionRecord, *, token_hash: str | None = None) -> None:
        """Interrupt whatever runs in the session and wait for it to end (bounded); with
        `token_hash`, only while the session's token is still that one."""
        await settle(self, record, token_hash=token_hash)

    async def interrupt(self, session_id: str, turn_id: str | None = None) -> None:
        """Ask the session's running turn (`turn_id` only, when given) to stop at its next
        safe point."""
        self.turns.stop(session_id, turn_id)
        if not self.turns.runs_here(session_id):
            # The turn runs in another process (or has not started): it reads the flag.
            if turn_id is None:
                await self.store.set_interrupt(session_id, True)
            else:
                await self.store.request_interrupt(session_id, turn_id)

    async def stop(self, session_id: str, *, principal: Principal) -> bool:
        """Interrupt the running (or parked) turn; False when nothing was running."""
        record = await self._owned(session_id, principal)
        events = await self.store.read(record.id)
        status = fold_status(events)
        if status == SessionStatus.AWAITING_APPROVAL:
            await abandon_parked(self, record, events)
            return True
        if status != SessionStatus.RUNNING and await self.store.get_lease(record.id) is None:
            return False
        turns = open_turns(events)
        await self.interrupt(record.id, turns[-1] if turns else None)
        return True

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
        from agentkit.engine.costs import session_cost

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
        if record is None:  # never created, or deleted: the same answer either way
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
        await record_decision(self, record, call_id, decision, principal)

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

    def known_record(self, session_id: str) -> SessionRecord | None:
        """The session record this process has already seen, if any."""
        return self._records.get(session_id)

    def _remember(self, record: SessionRecord) -> None:
        if len(self._records) >= 1024:
            self._records.pop(next(iter(self._records)))
        self._records[record.id] = record

    async def run_turn(
        self, session_id: str, turn_id: str, deadline: Deadline | None = None
    ) -> None:
        """Run or resume one turn. A second dispatch of the same turn does nothing.

        `deadline` is the end of the host's invocation (None locally: never continued)."""
        await run_turn(self, session_id, turn_id, deadline)

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None:
        workspace = self.workspace(session_id)
        seed(workspace, self.manifest, self.bundle.sandbox_dir, self.bundle.root)
        if files:
            write_files(workspace, files)

    # ---- recovery ------------------------------------------------------------------

    async def recover(self) -> None:
        """End turns whose process died; resume decided approvals; keep parked ones."""
        await recover_all(self)

    async def sweep(self) -> int:
        """Dispatch or fail open turns nobody works on (see `engine.sweeper`)."""
        from agentkit.engine.sweeper import sweep

        return await sweep(self)


async def _none_paused() -> Mapping[str, Collection[str]]:
    return {}


def _is_channel_key(record: SessionRecord, token: str) -> bool:
    return (
        record.channel_id != "http"
        and record.continuation_key is not None
        and hmac.compare_digest(
            record.continuation_key.encode("utf-8", "surrogatepass"),
            token.encode("utf-8", "surrogatepass"),
        )
    )


def _received(
    message: str, principal: Principal, source: str, files: dict[str, str]
) -> MessageReceived:
    return MessageReceived(
        message=message,
        principal=principal.id,
        source=source,
        workspace_files=sorted(files) or None,
    )


__all__ = ["AgentRuntime", "Bundle", "new_turn_id", "stop_key"]
