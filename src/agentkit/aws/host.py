"""`AwsHost`: one agent composed for Lambda.

The same `AgentRuntime` as locally, over other adapters: the DynamoDB store, a dispatcher
that invokes TurnFunction asynchronously (a duplicate invocation runs the turn once: the
runtime takes the session's turn lease), EventBridge Scheduler as the reminders' timer, and
no in-process hook fan-out: hooks run in HooksFunction from the events table's stream, so
the API and turn functions publish nothing. The manifest is read from the build folder baked
into the function (`manifest.json`); a cold start never walks `agent/`. With a workspace
bucket (`AGENTKIT_WORKSPACE_BUCKET`), session workspaces live in S3 (see
`agentkit.aws.workspace`): per-send files are uploaded as a message is accepted, and a turn
runs on a copy of its session's workspace that is written back when it ends.

Every function builds one `AwsHost` per cold start; the handlers in `agentkit.aws.handlers`
only translate their event into a call on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.authoring.contexts import HostServices, SessionInfo
from agentkit.aws.dispatchers import DispatchesEvals, InlineDispatcher, LambdaDispatcher
from agentkit.aws.settings import AwsSettings
from agentkit.aws.timer import EventBridgeTimer
from agentkit.engine.fanout import Fanout
from agentkit.engine.trace_context import carrier
from agentkit.events import Event, EventType
from agentkit.project.bundle import AgentBundle
from agentkit.scheduling.reminders import ReminderService
from agentkit.scheduling.schedules import ScheduleDispatcher
from agentkit.sessions import SessionRecord, validate_session_id

if TYPE_CHECKING:  # loaded only when used: a cold start that needs neither skips them
    from agentkit.ab.report import Aggregate
    from agentkit.ab.service import SnapshotSource
    from agentkit.aws.ab_snapshot import AbSnapshot
    from agentkit.aws.workspace import S3Workspaces
    from agentkit.engine.turn.deadline import Deadline
    from agentkit.evals.runs import EvalRunService

log = logging.getLogger("agentkit.aws.host")

ClientFactory = Callable[[str], Any]


class LazyClient:
    """A boto3 client made on first use: building one loads its service model, which a
    cold start should pay only when that service is actually called."""

    def __init__(self, factory: ClientFactory, service: str) -> None:
        self._factory = factory
        self._service = service
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = self._factory(self._service)
        return getattr(self._client, name)

    @property
    def built(self) -> Any:
        """The client made so far, or None."""
        return self._client

    def reset(self) -> None:
        """Drop the client (and its connections); the next call makes a new one."""
        self._client = None


class MetricsFanout:
    """Counts turns, failures and tokens as the runtime records them (no hooks here)."""

    def __init__(self, sink: Callable[[list[Event]], None]) -> None:
        self._sink = sink

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        if any(e.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED) for e in events):
            self._sink(events)


class AwsHost:
    """Compose the runtime over DynamoDB, Lambda and EventBridge Scheduler."""

    def __init__(
        self,
        settings: AwsSettings,
        *,
        bundle: AgentBundle | None = None,
        clients: ClientFactory | None = None,
        dispatcher: Any = None,
        fanout: Fanout | None = None,
        runtime_options: Mapping[str, Any] | None = None,
    ) -> None:
        from agentkit.engine.runtime import AgentRuntime
        from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore

        self.settings = settings
        self._clients = clients or _default_clients(settings)
        # Every client the host hands out is lazy: a first request that calls no AWS API
        # (`/v1/info`, a rejected credential) loads no service model, nor even boto3; and
        # after a SnapStart restore `renew_clients` swaps them all for fresh ones.
        self._lazy: list[LazyClient] = []
        self.bundle = bundle or AgentBundle.load_built(settings.build_dir)
        self.store = DynamoDBStore(
            DynamoDBSettings(
                endpoint_url=settings.service_endpoint("dynamodb"),
                region=settings.region,
                sessions_table=settings.sessions_table,
                events_table=settings.events_table,
            ),
            client=self._lazy_client("dynamodb"),
            max_poll_interval=max(settings.stream_poll_max, 0.05),
            blobs=self._blobs(settings),
            trace_carrier=carrier,  # HooksFunction continues each event's trace
        )
        self.timer = EventBridgeTimer(
            self._lazy_client("scheduler"),
            group=settings.schedule_group,
            target_arn=settings.scheduler_target_arn,
            role_arn=settings.scheduler_role_arn,
        )
        self.reminders = ReminderService(self.store, timer=self.timer)
        self.services = HostServices(
            reminders=self.reminders,
            logger=logging.getLogger(f"agentkit.agent.{self.bundle.slug}"),
        )
        if dispatcher is None:
            if settings.dispatch == "inline":
                dispatcher = InlineDispatcher()
            else:
                dispatcher = LambdaDispatcher(self._lazy_client("lambda"), settings.turn_function)
        if isinstance(dispatcher, InlineDispatcher):
            dispatcher.host = self
        self.dispatcher = dispatcher
        self.workspaces: S3Workspaces | None = None
        if settings.workspace_bucket:
            from agentkit.aws.workspace import S3Workspaces

            self.workspaces = S3Workspaces(
                self._lazy_client("s3"),
                settings.workspace_bucket,
                max_bytes=settings.workspace_max_bytes,
            )
        options: dict[str, Any] = dict(runtime_options or {})
        options.setdefault("state_root", Path("/tmp/agentkit") / self.bundle.slug)
        runtime_class: type[AgentRuntime] = AgentRuntime
        if self.workspaces is not None:
            from agentkit.aws.workspace_runtime import WorkspaceRuntime

            runtime_class = WorkspaceRuntime
            options["workspaces"] = self.workspaces
        self.runtime = runtime_class(
            self.bundle,
            self.store,
            dispatcher=dispatcher,
            fanout=fanout,
            host_services=self.services,
            **options,
        )
        if settings.pause_parameter:
            from agentkit.aws.pause_switch import SsmSwitch

            self.runtime.ports.switch = SsmSwitch(
                self._lazy_client("ssm"), settings.pause_parameter
            )
        self.reminders.attach(service=self.runtime, host=self.services)
        self.channels = self._channels()
        if self.bundle.manifest.mcp_connections:  # stdio servers run as child processes
            from agentkit.mcp.connections import attach

            attach(self.bundle, self.runtime, self.services)
        self.schedules = ScheduleDispatcher(
            self.runtime, definitions=self.bundle, host=self.services, channels=self.channels
        )
        self._hooks: list[Any] | None = None
        self._app: Any = None
        self._eval_runs: EvalRunService | None = None
        # A/B: the snapshot HooksFunction keeps (see `aws.ab_snapshot`); enrollment reads
        # the paused arms from it, and `GET /v1/abs` its arm totals.
        self.ab_snapshot: SnapshotSource | None = None
        config = self.bundle.manifest.ab_config or {}
        if self.bundle.manifest.abs and config.get("durableSnapshots", True):
            self.ab_snapshot = self._read_ab_snapshot
            self.runtime.ab_paused = self._ab_paused

    @classmethod
    def from_env(cls, **kwargs: Any) -> AwsHost:
        return cls(AwsSettings.from_env(), **kwargs)

    @property
    def slug(self) -> str:
        return self.bundle.slug

    @property
    def kind(self) -> str:
        """What `GET /v1/meta` reports as the host."""
        return "aws-emulated" if self.settings.emulated else "aws"

    def client(self, service: str) -> Any:
        return self._clients(service)

    def _lazy_client(self, service: str) -> LazyClient:
        lazy = LazyClient(self._clients, service)
        self._lazy.append(lazy)
        return lazy

    def renew_clients(self) -> int:
        """Forget every AWS client this host made, so each is built again (with new
        connections and credentials) on its next use; how many were dropped. For a
        SnapStart restore (`agentkit.aws.snapstart`)."""
        dropped = sum(1 for lazy in self._lazy if lazy.built is not None)
        for lazy in self._lazy:
            lazy.reset()
        return dropped

    # -- the API -----------------------------------------------------------------------

    def app(self) -> Any:
        """The FastAPI app, single-agent layout, with the deployed auth chain."""
        if self._app is None:
            from agentkit.aws.auth import auth_chain
            from agentkit.server.app import create_app
            from agentkit.server.options import AgentMount, ServerOptions

            options = ServerOptions(
                mode="single",
                dev=False,
                auth=auth_chain(self.settings),
                max_stream_window=self.settings.stream_window,
                # Mangum sends a response only when it ends: a long poll, not a stream.
                stream_until_first_events=True,
            )
            self._serve_channels()
            mount = AgentMount(self.slug, self.runtime, host=self, channels=self.channels)
            self._app = create_app([mount], options)
        return self._app

    # -- turns -------------------------------------------------------------------------

    async def run_turn(
        self, session_id: str, turn_id: str, deadline: Deadline | None = None
    ) -> None:
        """Run (or resume) one turn; a duplicate of a finished or running turn does nothing.

        With `deadline` (TurnFunction's), a turn that would outlive the invocation stops at
        a step boundary and dispatches itself again (see `agentkit.engine.turn.deadline`).
        With a workspace bucket the turn runs on a fresh copy of the session's workspace,
        written back (within the size cap) when it ends, however it ends."""
        session_id = validate_session_id(session_id)
        if self.workspaces is None:
            await self.runtime.run_turn(session_id, turn_id, deadline)
            return
        workspaces = self.workspaces
        local = self.runtime.workspace(session_id)
        before = await asyncio.to_thread(workspaces.hydrate, session_id, local)
        try:
            await self.runtime.run_turn(session_id, turn_id, deadline)
        finally:
            try:
                await asyncio.to_thread(workspaces.write_back, session_id, local, before)
            except Exception:
                # The turn's record is already durable; only its files are lost, and a
                # retry would not bring them back (the turn would not run again).
                log.exception("workspace of %s not written back", session_id)
            finally:
                workspaces.discard_local(local)

    async def fail_lost_turn(self, session_id: str, turn_id: str, reason: str) -> bool:
        """TurnFunction gave up on `turn_id` (its retries ran out): unless the turn ended or
        is parked on an approval, record it as `turn.failed` with `reason`. Never
        re-dispatched, so a function that crashes on every attempt cannot loop; a message
        queued behind it runs next. True when this call recorded the failure."""
        from agentkit.engine.recovery import fail_lost

        record = await self.store.get_session(validate_session_id(session_id))
        if record is None:
            return False
        # A holder of its own and a re-read under the lease: two deliveries of the same
        # failure record one `turn.failed`.
        return await fail_lost(self.runtime.ports, record, turn_id, reason)

    async def sweep(self) -> int:
        """Dispatch or fail open turns nobody works on (SchedulerFunction's rate schedule)."""
        return await self.runtime.sweep()

    async def sweep_blobs(self) -> dict[str, int] | None:
        """Remove the bucket's blobs no event names any more, once a UTC day: the first
        sweep of the day claims it (`agentkit.store.blob_sweep`; it scans the events
        table). None when it is not this sweep's turn, or there is no bucket."""
        from datetime import UTC, datetime

        from agentkit.store.blob_sweep import BLOB_SWEEP_CLAIM_TTL, sweep_blobs

        if self.store.blobs is None or not self.settings.workspace_bucket:
            return None
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        if not await self.store.claim(f"blob-sweep:{day}", BLOB_SWEEP_CLAIM_TTL):
            return None
        result = await sweep_blobs(self.store)
        if result is None:
            return None
        return {"stored": result.stored, "removed": result.removed}

    # -- hooks -------------------------------------------------------------------------

    def hooks(self) -> list[Any]:
        if self._hooks is None:
            from agentkit.hooks import load_hooks

            self._hooks = load_hooks(self.bundle)
        return self._hooks

    async def deliver_to_hooks(self, events: Iterable[Event]) -> list[Any]:
        """Call the agent's hooks with `events`, in order; returns the handlers that failed."""
        from agentkit.engine.tools.calls import session_info
        from agentkit.hooks import deliver_to_hooks

        async def lookup(session_id: str) -> SessionInfo | None:
            record = await self.store.get_session(session_id)
            return session_info(record) if record is not None else None

        batch = list(events)
        failures = await deliver_to_hooks(self.hooks(), batch, sessions=lookup)
        if self.channels is not None:
            # Channel replies and approval requests run here, never in the webhook request.
            from agentkit.channels.delivery import deliver_to_channels

            failures += await deliver_to_channels(self.channels, batch, sessions=lookup)
        return failures

    # -- channels ----------------------------------------------------------------------

    def _channels(self) -> Any:
        """The channel runtime when the agent has channels (credentials read first)."""
        if not self.bundle.manifest.channels:
            return None
        from agentkit.aws.channel_secrets import load_channel_secrets
        from agentkit.channels.runtime import ChannelRuntime

        load_channel_secrets(self.settings, ("GITHUB_TOKEN", "SLACK_BOT_TOKEN"))
        runtime = ChannelRuntime(
            self.runtime, self.bundle, self.store, self.services, deployed=True
        )
        _ = runtime.channels  # load them now: packs offer `host.github` to tools
        return runtime

    def _serve_channels(self) -> None:
        """Before the API serves: webhook secrets in, and say which channel cannot run."""
        if self.channels is None:
            return
        from agentkit.aws.channel_secrets import load_channel_secrets

        load_channel_secrets(self.settings, ("GITHUB_WEBHOOK_SECRET", "SLACK_SIGNING_SECRET"))
        for name, definition in self.channels.channels.items():
            check = getattr(definition.auth, "check_deployable", None)
            try:
                if callable(check):
                    check()
            except Exception as exc:
                log.error("channel %s will refuse every request: %s", name, exc)

    def _blobs(self, settings: AwsSettings) -> Any:
        """Large payloads in the workspace bucket, under `blobs/` (see `store.blobs`)."""
        if not settings.workspace_bucket:
            return None
        from agentkit.store._s3blobs import S3Blobs

        return S3Blobs(self._lazy_client("s3"), settings.workspace_bucket)

    def read_stream_event(self, image: dict[str, Any]) -> Event | None:
        """The event of a stream record's NewImage (large events reassembled)."""
        from agentkit.store.dynamodb import read_stream_event

        return read_stream_event(
            self.client("dynamodb"), self.settings.events_table, image, self.store.blobs
        )

    # -- A/B ---------------------------------------------------------------------------

    def _snapshot(self) -> AbSnapshot:
        from agentkit.aws.ab_snapshot import AbSnapshot

        return AbSnapshot(self.client("dynamodb"), self.settings.sessions_table)

    async def _read_ab_snapshot(self) -> Aggregate:
        return await self._snapshot().read()

    async def _ab_paused(self) -> Mapping[str, Any]:
        agg = await self._snapshot().read()
        return {k: tuple(v) for k, v in agg.paused.items()}

    async def fold_abs(self, events: Iterable[Event]) -> list[Any]:
        """HooksFunction: add a stream batch to the A/B snapshot (nothing without
        experiments or with `durable_snapshots=False`)."""
        if self.ab_snapshot is None:
            return []
        from agentkit.aws.ab_snapshot import fold_batch

        async def record_pause(session_id: str, event: Any) -> None:
            record = await self.store.get_session(session_id)
            if record is not None:
                await self.runtime.record(record, [event])

        return await fold_batch(
            self.store, self._snapshot(), self.runtime.experiments, list(events), record_pause
        )

    # -- eval runs (`agentkit.aws.eval_runs`) ------------------------------------------

    @property
    def eval_runs(self) -> EvalRunService:
        """The eval routes' service: snapshots in the store, runs in TurnFunction."""
        if self._eval_runs is None:
            from agentkit.aws.eval_runs import eval_run_service

            self._eval_runs = eval_run_service(self.bundle, self.store, self._launch_eval)
        return self._eval_runs

    async def _launch_eval(self, run_id: str) -> None:
        if not isinstance(self.dispatcher, DispatchesEvals):
            raise RuntimeError("this host's dispatcher cannot hand off eval runs")
        await self.dispatcher.dispatch_eval(run_id)

    async def run_eval(self, run_id: str) -> bool:
        """TurnFunction: run a started eval run; False for an unknown or repeated one."""
        from agentkit.aws.eval_runs import execute_run

        return await execute_run(self.eval_runs, run_id, self.store.claim)

    # -- schedules and reminders -------------------------------------------------------

    async def dispatch_schedule(self, schedule_id: str) -> dict[str, Any]:
        return await self.schedules.dispatch_schedule(schedule_id)

    async def dispatch_reminder(self, reminder_id: str) -> dict[str, Any]:
        return await self.reminders.dispatch_reminder(reminder_id)

    async def fire_reminder(self, reminder_id: str) -> None:
        """What a reminder's EventBridge schedule does when it fires (never raises)."""
        await self.reminders.fire(reminder_id)

    async def claim_once(self, key: str, ttl: float = 7 * 86400) -> bool:
        """True the first time `key` is seen (Scheduler and Lambda deliver at least once)."""
        return await self.store.claim(key, ttl)


def _default_clients(settings: AwsSettings) -> ClientFactory:
    from agentkit.aws.clients import client

    def factory(service: str) -> Any:
        return client(service, settings)

    return factory
