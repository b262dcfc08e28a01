"""Eval runs started over HTTP (`/v1/dev/evals/runs`): asynchronous, polled, listed.

`EvalRunService` starts a run in the background (one at a time: a second start while one
runs is a 409), updates its snapshot as cases finish, and keeps snapshots in a
`RunRepository`: `MemoryRuns` (process memory, the newest `max_playground_runs`) or, with
`persist_runs`, `FileRuns` beside the agent's sessions, which survive a restart. A run
that was still `running` when its process died is marked `failed` at the next start.

A snapshot's `status` is `running`, then `completed` (every case ran: see `ok` and each
case's status) or `failed` (the batch itself broke: the reason is in `errors`).

Where a background task would not outlive the request (an API function on Lambda), the
service is given a `launcher` and a `StoreRuns` repository: `start` saves the snapshot
through the Store port and hands the run id to the launcher (an asynchronous invocation
of the turn function), which calls `execute` elsewhere. Which run is active is then read
from the store; a run left `running` past `REMOTE_RUN_LIMIT` is marked `failed`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentkit.errors import Conflict, HttpError, InvalidId, NotFound
from agentkit.evals.baseline import load_baseline
from agentkit.evals.runner import CaseResult, EvalRunner, select
from agentkit.project.bundle import AgentBundle
from agentkit.store._fs import write_atomic
from agentkit.store.base import EvalRunStore

__all__ = [
    "EvalRunService",
    "FileRuns",
    "MemoryRuns",
    "RunRepository",
    "ServesEvalRuns",
    "StoreRuns",
    "local_eval_runs",
]

log = logging.getLogger("agentkit.evals")
RUN_DIR = "eval-runs"
BASELINE_FILE = "evals/baseline.json"  # relative to the project root
RunnerFactory = Callable[[AgentBundle], EvalRunner]
Launcher = Callable[[str], Awaitable[None]]
# Longer than the turn function may run (15 minutes): a remote run still `running` after
# this lost its invocation.
REMOTE_RUN_LIMIT = timedelta(minutes=20)


class RunRepository(Protocol):
    """Where run snapshots are kept."""

    async def save(self, snapshot: dict[str, Any]) -> None: ...

    async def get(self, run_id: str) -> dict[str, Any] | None: ...

    async def list(self) -> list[dict[str, Any]]:
        """Every kept snapshot, newest first."""
        ...


class MemoryRuns:
    """Snapshots in process memory; only the newest `cap` are kept."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._runs: dict[str, dict[str, Any]] = {}

    async def save(self, snapshot: dict[str, Any]) -> None:
        self._runs.pop(snapshot["runId"], None)
        self._runs[snapshot["runId"]] = snapshot
        while len(self._runs) > self.cap:
            oldest = min(self._runs.values(), key=lambda s: (s["createdAt"], s["runId"]))
            del self._runs[oldest["runId"]]

    async def get(self, run_id: str) -> dict[str, Any] | None:
        return self._runs.get(run_id)

    async def list(self) -> list[dict[str, Any]]:
        return sorted(self._runs.values(), key=lambda s: s["createdAt"], reverse=True)


class FileRuns:
    """One JSON file per run under `<state dir>/eval-runs/` (atomic writes)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, run_id: str) -> Path:
        if (
            not run_id.startswith("run_")
            or not run_id[4:].replace("-", "").replace("_", "").isalnum()
        ):
            raise NotFound(f"unknown eval run {run_id!r}")
        return self.folder / f"{run_id}.json"

    async def save(self, snapshot: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = json.dumps(snapshot).encode()
        await asyncio.to_thread(write_atomic, self._path(snapshot["runId"]), data)

    async def get(self, run_id: str) -> dict[str, Any] | None:
        try:
            path = self._path(run_id)
        except NotFound:
            return None
        try:
            loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return loaded

    async def list(self) -> list[dict[str, Any]]:
        if not self.folder.is_dir():
            return []
        out = []
        for path in self.folder.glob("run_*.json"):
            try:
                out.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                log.warning("skipping unreadable eval run %s", path.name)
        return sorted(out, key=lambda s: s["createdAt"], reverse=True)


class StoreRuns:
    """Snapshots through the Store port: files under `agentkit serve`, DynamoDB on AWS."""

    def __init__(self, store: EvalRunStore) -> None:
        self.store = store

    async def save(self, snapshot: dict[str, Any]) -> None:
        await self.store.put_eval_run(snapshot)

    async def get(self, run_id: str) -> dict[str, Any] | None:
        try:
            found = await self.store.get_eval_run(run_id)
        except InvalidId:  # not an id any run could have
            return None
        return found

    async def list(self) -> list[dict[str, Any]]:
        return await self.store.list_eval_runs()


@runtime_checkable
class ServesEvalRuns(Protocol):
    """Optional, on a mount's host: the eval routes' service, made on first use and kept by
    the host. A host without it serves no evals: an empty listing, 404 for a run."""

    @property
    def eval_runs(self) -> EvalRunService: ...


def local_eval_runs(bundle: AgentBundle, state_dir: Path, store: object) -> EvalRunService:
    """The service of a host with a local state directory (`agentkit serve`): runs go in
    process, and with `persist_runs` their snapshots go through the host's store (beside
    the sessions) when it keeps eval runs, else into files in `state_dir`."""
    persist = bundle.evals_config().persist_runs
    repo = StoreRuns(store) if persist and isinstance(store, EvalRunStore) else None
    return EvalRunService(bundle, state_dir=state_dir, can_run=True, repo=repo)


class RunNotStarted(HttpError):
    """The run's invocation could not be handed off; the run is recorded as failed."""

    status = 503
    code = "eval_run_not_started"


class RunsUnavailable(HttpError):
    """This host cannot run evals in the background (an API function on Lambda)."""

    status = 501
    code = "eval_runs_unavailable"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    return "run_" + secrets.token_hex(8)


class EvalRunService:
    """What the eval routes ask for: listing, starting and polling runs."""

    def __init__(
        self,
        bundle: AgentBundle,
        *,
        state_dir: Path | None = None,
        runner_factory: RunnerFactory | None = None,
        can_run: bool = True,
        repo: RunRepository | None = None,
        launcher: Launcher | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.bundle = bundle
        # False where a background task would not outlive the request and no launcher
        # hands runs elsewhere: listing and polling work, starting a run answers 501.
        self.can_run = can_run or launcher is not None
        self.launcher = launcher
        self.clock = clock or (lambda: datetime.now(UTC))
        self.config = bundle.evals_config()
        self.durable = repo is not None or bool(self.config.persist_runs and state_dir is not None)
        self.repo: RunRepository = repo or (
            FileRuns(state_dir / RUN_DIR)
            if self.durable and state_dir is not None
            else MemoryRuns(self.config.max_playground_runs)
        )
        self.runner_factory = runner_factory or (lambda b: EvalRunner(b))
        self.active: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._recovered = False

    def listing(self) -> dict[str, Any]:
        """`GET /v1/dev/evals`: the discovered cases and the config the playground needs."""
        return {
            "evals": [
                {"id": e.id, "tags": list(e.tags), "description": e.description, "path": e.ref.path}
                for e in self.bundle.manifest.evals
            ],
            "config": {
                "maxConcurrency": self.config.max_concurrency,
                "maxPlaygroundRuns": self.config.max_playground_runs,
                "durableRuns": self.durable,
            },
            "baseline": self.baseline(),
        }

    def baseline(self) -> dict[str, dict[str, Any]] | None:
        """The project's committed baseline (`evals/baseline.json`, as written by `agentkit
        eval --baseline evals/baseline.json --update-baseline`), or None without one."""
        path = Path(self.bundle.root) / BASELINE_FILE
        if not path.is_file():
            return None
        try:
            return load_baseline(path)
        except (OSError, ValueError):
            log.warning("ignoring %s: not an eval baseline", path)
            return None

    async def recover(self) -> None:
        """Runs left `running` by a dead process end `failed` (their task is gone)."""
        if self.launcher is not None:
            await self._expire_remote()
            return
        if self._recovered:
            return
        self._recovered = True
        for snap in await self.repo.list():
            if snap.get("status") == "running" and snap["runId"] != self.active:
                snap["status"] = "failed"
                snap["finishedAt"] = _now()
                snap.setdefault("errors", []).append("the server stopped while the run was active")
                await self.repo.save(snap)

    async def _expire_remote(self) -> None:
        """Remote runs: one still `running` past `REMOTE_RUN_LIMIT` lost its invocation."""
        for snap in await self.repo.list():
            if snap.get("status") == "running" and self._overdue(snap):
                snap["status"] = "failed"
                snap["finishedAt"] = _now()
                snap.setdefault("errors", []).append(
                    "the run's invocation stopped before the run finished"
                )
                await self.repo.save(snap)

    def _overdue(self, snap: dict[str, Any]) -> bool:
        try:
            created = datetime.fromisoformat(str(snap["createdAt"]).replace("Z", "+00:00"))
        except (KeyError, ValueError):
            return True
        return self.clock() - created > REMOTE_RUN_LIMIT

    async def _active_id(self) -> str | None:
        if self.launcher is None:
            return self.active
        running = [s for s in await self.repo.list() if s.get("status") == "running"]
        return str(running[0]["runId"]) if running else None

    async def runs(self) -> dict[str, Any]:
        await self.recover()
        out: dict[str, Any] = {"runs": await self.repo.list()}
        active = await self._active_id()
        if active is not None:
            out["activeRunId"] = active
        return out

    async def get(self, run_id: str) -> dict[str, Any]:
        await self.recover()
        snap = await self.repo.get(run_id)
        if snap is None:
            raise NotFound(f"unknown eval run {run_id!r}")
        return snap

    async def start(
        self, filter_ids: Sequence[str] = (), tags: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Start a run in the background: 404 when nothing matches, 409 while one runs."""
        await self.recover()
        if not self.can_run:
            raise RunsUnavailable("this host cannot run evals; run `agentkit eval` instead")
        active = await self._active_id()
        if active is not None:
            raise Conflict(f"eval run {active} is still running", code="eval_run_active")
        specs = select(self.bundle.manifest.evals, filter_ids, tags)
        if not specs:
            raise NotFound("no eval matches the request", code="no_evals")
        run_id = new_run_id()
        snap: dict[str, Any] = {
            "runId": run_id,
            "status": "running",
            "createdAt": _now(),
            "filterIds": list(filter_ids),
            "tags": list(tags),
            "cases": [{"id": s.id, "tags": list(s.tags), "status": "pending"} for s in specs],
            "errors": [],
        }
        if self.launcher is not None:
            await self.repo.save(snap)
            await self._launch(snap)
        else:
            self.active = run_id
            await self.repo.save(snap)
            self._task = asyncio.create_task(self._execute(snap, [s.id for s in specs]))
        copy: dict[str, Any] = json.loads(json.dumps(snap))
        return copy

    async def _launch(self, snap: dict[str, Any]) -> None:
        assert self.launcher is not None
        try:
            await self.launcher(snap["runId"])
        except Exception as exc:
            log.exception("eval run %s could not be handed off", snap["runId"])
            snap["status"] = "failed"
            snap["finishedAt"] = _now()
            snap["errors"].append(f"the run could not be started: {type(exc).__name__}")
            await self.repo.save(snap)
            raise RunNotStarted("the eval run could not be started; try again") from exc

    async def execute(self, run_id: str) -> bool:
        """Run a stored `running` run here (the launcher's other end). False when there is
        no such run or it is no longer running (a repeated invocation)."""
        snap = await self.repo.get(run_id)
        if snap is None or snap.get("status") != "running":
            return False
        ids = [str(c["id"]) for c in snap.get("cases", [])]
        self.active = run_id
        await self._execute(snap, ids)
        return True

    async def wait(self) -> None:
        """Wait for the active run (tests and shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _execute(self, snap: dict[str, Any], ids: list[str]) -> None:
        by_id = {c["id"]: c for c in snap["cases"]}
        pending: list[asyncio.Task[None]] = []

        def progress(what: str, result: CaseResult | None) -> None:
            case_id = what.partition(":")[2]
            case = by_id.get(case_id)
            if case is None:
                return
            if result is None:
                case["status"] = "running"
            else:
                case.update(result.to_dict())
            pending.append(asyncio.ensure_future(self.repo.save(snap)))

        try:
            runner = self.runner_factory(self.bundle)
            runner.on_progress = progress
            specs = [s for s in self.bundle.manifest.evals if s.id in set(ids)]
            result = await runner.run(sorted(specs, key=lambda s: s.id))
            snap["status"] = "completed"
            snap["ok"] = result.ok
            snap["counts"] = result.counts()
        except Exception as exc:  # a broken batch is the run's error, reported on its snapshot
            log.exception("eval run %s failed", snap["runId"])
            snap["status"] = "failed"
            snap["errors"].append(f"{type(exc).__name__}: {exc}")
        finally:
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            snap["finishedAt"] = _now()
            self.active = None
            try:
                await self.repo.save(snap)
            except Exception:
                log.exception("could not save eval run %s", snap["runId"])
