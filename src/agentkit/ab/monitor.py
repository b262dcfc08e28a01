"""The live side of the experiments: samples as turns finish, `on_sample`, guardrails.

`AbMonitor` folds recorded events as they are published (it is a `Fanout`), so each
finished turn of an enrolled session becomes a sample at once. For each sample it calls the
experiments' `on_sample` (observe-only: errors are logged, never raised, and a slow handler
delays nothing) and re-checks the guardrails. A variant whose guardrail is breached is
paused: an `ab.paused` event is recorded on the session whose turn showed it, a warning is
logged, and from then on new sessions that would have drawn it go to the control arm
(sessions already enrolled keep their arm). The paused set is itself a fold of the streams
(`ab.paused` events), rebuilt by `load` when the process starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from agentkit.ab.fold import SessionFolder, TurnSample
from agentkit.ab.report import Aggregate, breaches
from agentkit.ab.service import fold_all
from agentkit.authoring.ab import AbDefinition
from agentkit.events import AbPaused, Event, draft
from agentkit.sessions import SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

log = logging.getLogger("agentkit.ab")


def sample_for(experiment: str, sample: TurnSample) -> dict[str, Any]:
    """What `on_sample` receives: one turn's metrics, with the experiment's arm."""
    out = sample.wire()
    out["experiment"] = experiment
    out["variant"] = sample.assignments.get(experiment)
    return out


async def call_on_sample(defs: Mapping[str, AbDefinition], sample: TurnSample) -> None:
    """Call every experiment's `on_sample` the sample belongs to; never raises."""
    for name in sorted(sample.assignments):
        ab = defs.get(name)
        if ab is None or ab.on_sample is None:
            continue
        try:
            if inspect.iscoroutinefunction(ab.on_sample):
                await ab.on_sample(sample_for(name, sample))
            else:
                await asyncio.to_thread(ab.on_sample, sample_for(name, sample))
        except Exception:  # observe-only: a failing collector never affects a session
            log.exception("on_sample of A/B experiment %s failed", name)


class AbMonitor:
    """A `Fanout` that keeps the experiments' aggregate warm and enforces guardrails."""

    def __init__(self, experiments: Mapping[str, AbDefinition]) -> None:
        self.experiments = experiments
        self.aggregate = Aggregate()
        self.folders: dict[str, SessionFolder] = {}
        self.runtime: AgentRuntime | None = None
        self._queue: asyncio.Queue[tuple[SessionRecord, list[Event]]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loaded = False

    def attach(self, runtime: AgentRuntime) -> None:
        """Record pauses through `runtime`, and tell its enrollment which arms are paused."""
        self.runtime = runtime
        runtime.ab_paused = self.all_paused

    def paused(self, experiment: str) -> Collection[str]:
        return tuple(self.aggregate.paused.get(experiment, {}))

    async def all_paused(self) -> Mapping[str, Collection[str]]:
        """Paused variants per experiment (what enrollment asks before each session)."""
        return {k: tuple(v) for k, v in self.aggregate.paused.items()}

    async def load(self) -> None:
        """Fold every existing session (at start, so totals and pauses survive restarts)."""
        if self.runtime is None:
            return
        for fold in await fold_all(self.runtime):
            folder = SessionFolder(fold.session_id)
            folder.fold = fold
            self.folders[fold.session_id] = folder
            self.aggregate.add_session(fold)
        self._loaded = True

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._drain())
        self._queue.put_nowait((session, events))

    async def idle(self) -> None:
        """Wait until every published batch has been handled (for tests and shutdown)."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self) -> None:
        await self.idle()
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    async def _drain(self) -> None:
        assert self._queue is not None
        while True:
            session, events = await self._queue.get()
            try:
                await self.handle(session, events)
            except Exception:  # observe-only
                log.exception("A/B monitor failed on session %s", session.id)
            finally:
                self._queue.task_done()

    async def handle(self, session: SessionRecord, events: list[Event]) -> None:
        folder = self.folders.get(session.id)
        if folder is None:
            folder = self.folders[session.id] = SessionFolder(session.id)
        known = dict(folder.fold.assignments)
        pauses = len(folder.fold.pauses)
        samples = folder.add_all(events)
        self.aggregate.enroll({k: v for k, v in folder.fold.assignments.items() if k not in known})
        for p in folder.fold.pauses[pauses:]:
            self.aggregate.paused.setdefault(p.experiment, {}).setdefault(p.variant, p.reason)
        for sample in samples:
            self.aggregate.add(sample)
            await call_on_sample(self.experiments, sample)
        if samples:
            await self.enforce(session)

    async def enforce(self, session: SessionRecord) -> None:
        """Pause every variant a guardrail now shows breached."""
        for b in breaches(self.aggregate, self.experiments):
            self.aggregate.paused.setdefault(b.experiment, {})[b.variant] = b.reason
            log.warning("A/B %s: variant %s paused: %s", b.experiment, b.variant, b.reason)
            if self.runtime is not None:
                paused = AbPaused(experiment=b.experiment, variant=b.variant, reason=b.reason)
                await self.runtime.record(session, [draft(paused)])


__all__ = ["AbMonitor", "call_on_sample", "sample_for"]
