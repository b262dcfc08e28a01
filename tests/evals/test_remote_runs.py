"""`EvalRunService` with a launcher (how the API function on AWS starts runs).

The launcher only hands the run id on; `execute` runs it elsewhere. A launcher that fails
leaves the run `failed` and answers 503; a run left `running` past the limit (its
invocation died) is marked `failed`, which frees the next start.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentkit.errors import HttpError
from agentkit.evals.runs import REMOTE_RUN_LIMIT, EvalRunService, StoreRuns
from agentkit.project.bundle import AgentBundle
from agentkit.store.memory import MemoryStore
from tests.evals.conftest import case, write_project

EVALS = {"one.eval.py": case('define_eval(message="hi")')}


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_launched_run_is_executed_elsewhere_and_a_failed_launch_is_reported(
    tmp_path: Path,
) -> None:
    bundle = AgentBundle.discover(write_project(tmp_path, EVALS))
    store = MemoryStore()
    launched: list[str] = []

    async def launcher(run_id: str) -> None:
        launched.append(run_id)

    api = EvalRunService(bundle, repo=StoreRuns(store), launcher=launcher)
    started = await api.start()
    assert launched == [started["runId"]]
    stored = await store.get_eval_run(started["runId"])
    assert stored is not None and stored["cases"][0]["status"] == "pending"

    worker = EvalRunService(bundle, repo=StoreRuns(store), launcher=launcher)
    assert await worker.execute(started["runId"]) is True
    assert await worker.execute(started["runId"]) is False  # no longer running
    done = await api.get(started["runId"])
    assert done["status"] == "completed" and done["cases"][0]["status"] == "passed"

    async def broken(run_id: str) -> None:
        raise ConnectionError("lambda unreachable")

    failing = EvalRunService(bundle, repo=StoreRuns(store), launcher=broken)
    with pytest.raises(HttpError) as raised:
        await failing.start()
    assert raised.value.status == 503 and raised.value.code == "eval_run_not_started"
    newest = (await store.list_eval_runs())[0]
    assert newest["status"] == "failed" and "could not be started" in newest["errors"][0]
    assert "activeRunId" not in await failing.runs()  # nothing left blocking


async def test_a_run_whose_invocation_died_expires(tmp_path: Path) -> None:
    bundle = AgentBundle.discover(write_project(tmp_path, EVALS))
    store = MemoryStore()
    clock = Clock()

    async def lost(run_id: str) -> None:  # handed off, then the invocation never finishes
        return None

    api = EvalRunService(bundle, repo=StoreRuns(store), launcher=lost, clock=clock)
    first = await api.start()
    clock.now += REMOTE_RUN_LIMIT - timedelta(minutes=1)
    with pytest.raises(HttpError) as busy:
        await api.start()
    assert busy.value.status == 409
    clock.now += timedelta(minutes=2)
    listing = await api.runs()
    assert "activeRunId" not in listing
    expired = await api.get(first["runId"])
    assert expired["status"] == "failed" and "invocation stopped" in expired["errors"][0]
    second = await api.start()
    assert second["runId"] != first["runId"]
