"""`LocalHost`: one agent served from this machine.

It composes a `FileStore` under the agent's state directory (`<state-root>/<slug>/`, or
`<project>/.agentkit/` when no state root is given), the `AgentRuntime` running turns as
asyncio tasks, in-process hook fan-out, reminders, and the local timer that fires schedules
and reminders (off under `--dev`, where they only run by hand). The same object is the
programmatic handle: `dispatch_schedule` and `dispatch_reminder` go through the production
paths exactly as the dev routes do.

One process owns a state directory at a time (a lock file enforces it). That is what lets
`start()` treat every turn lease it finds as left by a dead process: it releases them and
lets the runtime's recovery end those turns as `turn.failed` (parked approvals stay
resolvable). Shutdown does not try to finish turns either: the process may die at any
moment anyway (`kill -9`), so the one path that matters is recovery at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from agentkit.ab.monitor import AbMonitor
from agentkit.authoring.contexts import HostServices
from agentkit.channels.delivery import ChannelFanout
from agentkit.channels.runtime import ChannelRuntime
from agentkit.engine.arms import experiments as engine_experiments
from agentkit.engine.fanout import Fanout, MultiFanout
from agentkit.engine.fleet_switch import FileSwitch
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.service import AgentService
from agentkit.hooks import LocalHookFanout, load_hooks
from agentkit.project.bundle import AgentBundle
from agentkit.scheduling.catch_up import SlotLedger, describe_schedules
from agentkit.scheduling.reminders import ReminderService
from agentkit.scheduling.schedules import (
    ScheduleDispatcher,
    ScheduleRunner,
    reminder_timers_enabled,
    route_timer_key,
    schedules_enabled,
)
from agentkit.scheduling.timer import LocalTimer
from agentkit.server.options import AgentMount
from agentkit.store.base import Store
from agentkit.store.files import FileStore

if TYPE_CHECKING:
    from agentkit.evals.runs import EvalRunService

log = logging.getLogger("agentkit.host")


class StateDirBusy(RuntimeError):
    """Another process is serving from the same state directory."""


@dataclass(frozen=True, slots=True)
class LocalHostOptions:
    state_root: Path | None = None
    dev: bool = False
    schedules: bool = True  # False under --no-schedules


def state_dir_for(bundle: AgentBundle, state_root: Path | None) -> Path:
    """Where one agent's sessions live on disk."""
    if state_root is not None:
        return state_root / bundle.slug
    return bundle.root / ".agentkit"


class LocalHost:
    """Compose and run one agent locally; `start()` recovers, `aclose()` shuts down."""

    def __init__(
        self,
        bundle: AgentBundle,
        options: LocalHostOptions | None = None,
        *,
        runtime_options: dict[str, Any] | None = None,
        store: Store | None = None,
    ) -> None:
        self.bundle = bundle
        self.options = opts = options or LocalHostOptions()
        self.state_dir = state_dir_for(bundle, opts.state_root)
        # The sessions' store: a `FileStore` in the state directory unless one is given
        # (tests run the same host over the DynamoDB store). The host closes it.
        self.store: Store = store if store is not None else FileStore(self.state_dir)
        fire_schedules = schedules_enabled(dev=opts.dev, no_schedules=not opts.schedules)
        fire_reminders = reminder_timers_enabled(dev=opts.dev)
        self.timer = LocalTimer() if (fire_schedules or fire_reminders) else None
        self.reminders = ReminderService(self.store, timer=self.timer if fire_reminders else None)
        self.services = HostServices(
            reminders=self.reminders,
            logger=logging.getLogger(f"agentkit.agent.{bundle.slug}"),
        )
        self.fanout = LocalHookFanout.from_bundle(bundle)
        # A/B experiments: samples, on_sample and guardrails as events are recorded.
        experiments = engine_experiments(bundle.manifest, bundle)
        self.ab = AbMonitor(experiments) if experiments else None
        fanout: Fanout = self.fanout if self.ab is None else MultiFanout([self.fanout, self.ab])
        self.runtime = AgentRuntime(
            bundle,
            self.store,
            fanout=fanout,
            host_services=self.services,
            state_root=self.state_dir,
            **(runtime_options or {}),
        )
        # The kill switch: a file in the state folder an operator can create by hand.
        self.runtime.ports.switch = FileSwitch(self.state_dir)
        self.reminders.attach(service=self.runtime, host=self.services)
        if self.ab is not None:
            self.ab.attach(self.runtime)
        self.channels: ChannelRuntime | None = None
        self.channel_fanout: ChannelFanout | None = None
        if bundle.manifest.channels:
            self.channels = ChannelRuntime(self.runtime, bundle, self.store, self.services)
            self.channel_fanout = ChannelFanout(self.channels)
            _ = self.channels.channels  # load them now: packs offer `host.github` to tools
            self.runtime.fanout = MultiFanout([fanout, self.channel_fanout])
        from agentkit.mcp.connections import attach

        self.mcp = attach(bundle, self.runtime, self.services)
        self.schedules = ScheduleDispatcher(
            self.runtime, definitions=bundle, host=self.services, channels=self.channels
        )
        self.schedule_runner = (
            ScheduleRunner(
                self.schedules, self.timer, SlotLedger(self.store), self.runtime.ports.switch
            )
            if fire_schedules and self.timer is not None
            else None
        )
        if self.timer is not None:
            self.timer.set_handler(self._on_timer)
        self._lock = FileLock(str(self.state_dir / "serve.lock"))
        self._eval_runs: EvalRunService | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._blob_sweeper: asyncio.Task[None] | None = None

    @property
    def slug(self) -> str:
        return self.bundle.slug

    @property
    def service(self) -> AgentService:
        return self.runtime

    def mount(self) -> AgentMount:
        return AgentMount(slug=self.slug, service=self.runtime, host=self, channels=self.channels)

    @property
    def eval_runs(self) -> EvalRunService:
        """The eval routes' service (`evals.runs.ServesEvalRuns`), made on first use: runs
        go in this process, over the bundle served then."""
        if self._eval_runs is None:
            # Imported here: the eval runner loads with the first eval request.
            from agentkit.evals.runs import local_eval_runs

            self._eval_runs = local_eval_runs(self.bundle, self.state_dir, self.store)
        return self._eval_runs

    def claim_state_dir(self) -> None:
        """Take the state directory's lock now, or raise `StateDirBusy`.

        `agentkit serve` calls this before it binds a port or prints anything, so a folder
        another process serves is refused in one line; `start` takes the lock otherwise.
        """
        if self._lock.is_locked:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise StateDirBusy(
                f"another agentkit process is serving from {self.state_dir}"
            ) from None

    async def start(self) -> None:
        """Take the state directory, recover what a dead process left, start timers."""
        self.claim_state_dir()
        released = await self._release_dead_leases()
        if released:
            log.info("%s: released %d turn lease(s) left by a stopped process", self.slug, released)
        await self.runtime.recover()
        if self.ab is not None:
            await self.ab.load()
        from agentkit.engine.sweeper import sweep_forever

        # Turns left open with nobody on them (a lost dispatch, a dead `agentkit run`) are
        # dispatched again or failed once quiet for a lease TTL.
        self._sweeper = asyncio.create_task(
            sweep_forever(self.runtime.sweep, self.runtime.lease_ttl)
        )
        # Blobs no event names any more (a deleted session's): at start, then every 6 h.
        from agentkit.store.blob_sweep import sweep_blobs_forever

        self._blob_sweeper = asyncio.create_task(sweep_blobs_forever(self.store))
        await self.reminders.start()
        if self.schedule_runner is not None:
            await self.schedule_runner.start()

    async def aclose(self) -> None:
        """Stop timers and hook delivery; turns still running are left for recovery."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        if self._blob_sweeper is not None:
            self._blob_sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._blob_sweeper
            self._blob_sweeper = None
        if self.schedule_runner is not None:
            await self.schedule_runner.stop()
        if self.timer is not None:
            await self.timer.close()
        await self.fanout.close()
        if self.ab is not None:
            await self.ab.close()
        if self.channel_fanout is not None:
            await self.channel_fanout.close()
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.store.close()
        if self._lock.is_locked:
            self._lock.release()

    def reload(self, bundle: AgentBundle) -> bool:
        """Serve `bundle` (the same folder, discovered again) from now on.

        Refused (False) when it has error diagnostics or names another slug: the code
        already running stays. Sessions live in the store, so nothing of them is lost.
        """
        if bundle.manifest.has_errors or bundle.slug != self.bundle.slug:
            return False
        self.bundle = bundle
        self.runtime.use_bundle(bundle)
        self.fanout.replace_hooks(load_hooks(bundle))
        self.schedules = ScheduleDispatcher(self.runtime, definitions=bundle, host=self.services)
        return True

    async def dispatch_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Fire a schedule now, exactly once, through the production path."""
        return await self.schedules.dispatch_schedule(schedule_id)

    async def list_schedules(self) -> list[dict[str, Any]]:
        """Every schedule with its next slot and the slots it missed (`GET /v1/dev/schedules`)."""
        runner = self.schedule_runner
        return await describe_schedules(
            self.schedules.schedules,
            SlotLedger(self.store),
            runner.next_slots() if runner is not None else {},
        )

    async def dispatch_reminder(self, reminder_id: str) -> dict[str, Any]:
        """Fire a reminder now, by hand."""
        return await self.reminders.dispatch_reminder(reminder_id)

    async def _on_timer(self, key: str) -> None:
        await route_timer_key(key, schedules=self.schedule_runner, reminders=self.reminders)

    async def _release_dead_leases(self) -> int:
        # Holding the state-dir lock means no other server runs here, but `agentkit run`
        # takes no such lock: a lease whose recorded process is alive is left alone.
        released = 0
        cursor: str | None = None
        while True:
            page = await self.store.list_sessions(None, limit=100, cursor=cursor)
            for record in page.items:
                lease = await self.store.get_lease(record.id)
                if lease is not None and not process_alive(lease.pid):
                    await self.store.release_lease(record.id, lease.holder)
                    released += 1
            cursor = page.cursor
            if cursor is None:
                return released


def process_alive(pid: int | None) -> bool:
    """Whether `pid` is another live process on this machine (None, or this process: no;
    a lease this process holds at start-up was left by an earlier runtime in it)."""
    if pid is None or pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
