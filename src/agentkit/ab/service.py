"""The A/B service: fold every session's stream into the `GET /v1/abs` answer.

It is a caller of the engine's public service (list sessions, read events) like any other
surface, so it runs the same on the file store and on DynamoDB. A host may hand it a
`SnapshotSource` (the AWS hooks function's incremental snapshot); then the arm totals come
from the snapshot and only the per-session rows are read from the streams.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from agentkit.ab.fold import SessionFold, fold_session
from agentkit.ab.report import Aggregate, report, session_rows
from agentkit.ab.timeline import MAX_POINTS, timeline
from agentkit.authoring.ab import AbConfig, AbDefinition
from agentkit.engine.service import AgentService
from agentkit.errors import HttpError, NotFound
from agentkit.sessions import Principal

SCANNER = Principal("agentkit:ab", admin=True)
SnapshotSource = Callable[[], Awaitable[Aggregate | None]]


@runtime_checkable
class KeepsAbSnapshot(Protocol):
    """Optional, on a mount's host: where `GET /v1/abs` reads its arm totals (the AWS host's
    snapshot, kept by HooksFunction); None, or a host without it: folded from the streams."""

    @property
    def ab_snapshot(self) -> SnapshotSource | None: ...


def ab_config(manifest_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `config` block: `agent/ab.config.py` over the defaults."""
    d = AbConfig()
    out: dict[str, Any] = {
        "maxPlaygroundSessions": d.max_playground_sessions,
        "durableSamples": d.durable_samples,
        "durableSnapshots": d.durable_snapshots,
    }
    out.update(manifest_config or {})
    return out


async def fold_all(service: AgentService) -> list[SessionFold]:
    """The A/B fold of every session the service has."""
    folds: list[SessionFold] = []
    cursor: str | None = None
    while True:
        page = await service.list_sessions(principal=SCANNER, limit=100, cursor=cursor)
        for record in page.items:
            try:
                events = await service.read_events(record.id, principal=SCANNER)
            except HttpError:
                continue  # deleted between the listing and the read
            folds.append(fold_session(record.id, events))
        cursor = page.cursor
        if cursor is None:
            return folds


class AbService:
    """Reports the experiments of one agent."""

    def __init__(
        self,
        service: AgentService,
        experiments: Mapping[str, AbDefinition],
        *,
        snapshot: SnapshotSource | None = None,
    ) -> None:
        self.service = service
        self.experiments = experiments
        self.snapshot = snapshot

    async def report(self, caller: Principal) -> dict[str, Any]:
        """Assignments per session (the caller's own unless admin) and per-arm results."""
        config = ab_config(self.service.manifest.ab_config)
        limit = int(config["maxPlaygroundSessions"])
        agg = await self.snapshot() if self.snapshot is not None else None
        if agg is None:
            folds = await fold_all(self.service)
            agg = Aggregate.of(folds)
            visible = [f for f in folds if caller.admin or f.principal == caller.id]
        else:
            # The totals came from the snapshot: read only the newest sessions for the rows.
            visible = await _newest(self.service, caller, limit)
        body = report(self.experiments, agg, session_rows(visible, limit), config)
        return {"ok": True, **body}

    async def timeline(
        self, *, experiment: str | None = None, max_points: int = MAX_POINTS
    ) -> dict[str, Any]:
        """The report replayed over time (every stream read: no snapshot holds history)."""
        if experiment is not None and experiment not in self.experiments:
            raise NotFound(f"no A/B experiment {experiment[:80]!r}", code="experiment_not_found")
        folds = await fold_all(self.service)
        body = timeline(self.experiments, folds, experiment=experiment, max_points=max_points)
        return {"ok": True, **body}


async def _newest(service: AgentService, caller: Principal, limit: int) -> list[SessionFold]:
    """The folds of the caller's newest sessions (enrolled ones, up to `limit`)."""
    folds: list[SessionFold] = []
    cursor: str | None = None
    while len(folds) < limit:
        page = await service.list_sessions(principal=caller, limit=min(100, limit), cursor=cursor)
        for record in page.items:
            try:
                events = await service.read_events(record.id, principal=caller)
            except HttpError:
                continue
            fold = fold_session(record.id, events)
            if fold.assignments:
                folds.append(fold)
        cursor = page.cursor
        if cursor is None:
            break
    return folds


__all__ = ["SCANNER", "AbService", "KeepsAbSnapshot", "SnapshotSource", "ab_config", "fold_all"]
