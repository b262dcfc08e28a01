"""The eval routes over HTTP against a real `agentkit serve`: 202/404/409, polling, the
in-memory cap, and runs persisted beside the sessions surviving a restart (and a kill -9)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.evals.conftest import case, write_project
from tests.fixtures.http_server import SLUG, Served, _env

pytestmark = pytest.mark.slow(reason="runs eval suites over HTTP")

HOLD = """
    import asyncio
    import os
    from pathlib import Path

    from pydantic import BaseModel
    from agentkit import ToolContext, define_tool


    class HoldInput(BaseModel):
        label: str = "x"


    @define_tool(description="Hold until the test opens the gate.")
    async def hold_gate(input: HoldInput, ctx: ToolContext) -> dict:
        gate = Path(os.environ["EVAL_GATE"])
        while not gate.exists():  # a gate the test opens, not a timing assumption
            await asyncio.sleep(0.02)
        return {"released": True}
"""
EVALS = {
    "held.eval.py": case(
        'define_eval(message="Hold the gate.", tags=["gate"], '
        'assertions=[called_tool("hold_gate")])'
    ),
    "quick/one.eval.py": case('define_eval(message="hi", tags=["quick"])'),
    "quick/two.eval.py": case(
        'define_eval(message="Weather in Rome?", tags=["quick"], '
        'assertions=[reply_contains("a zebra")])'
    ),
}


def serve(tmp_path: Path, config: str) -> Served:
    project = write_project(
        tmp_path / SLUG, EVALS, config=config, extra={"agent/tools/hold_gate.py": HOLD}
    )
    env = _env({"EVAL_GATE": str(tmp_path / "gate")})
    return Served(project, tmp_path / "state", [], env).start()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def wait_done(client: httpx.Client, url: str, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        snap: dict[str, Any] = client.get(f"{url}/v1/dev/evals/runs/{run_id}").json()
        if snap["status"] != "running":
            return snap
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} still running")


def test_runs_start_poll_conflict_and_not_found(tmp_path: Path, client: httpx.Client) -> None:
    served = serve(tmp_path, "max_concurrency=2, max_playground_runs=2")
    try:
        url = served.url
        listing = client.get(f"{url}/v1/dev/evals").json()
        assert [e["id"] for e in listing["evals"]] == ["held", "quick/one", "quick/two"]
        assert listing["config"]["maxPlaygroundRuns"] == 2
        assert listing["config"]["durableRuns"] is False

        nothing = client.post(f"{url}/v1/dev/evals/runs", json={"tags": ["nope"]})
        assert nothing.status_code == 404 and nothing.json()["ok"] is False
        # OR within a field, AND across: "held" has no "quick" tag.
        assert (
            client.post(
                f"{url}/v1/dev/evals/runs", json={"filterIds": ["held"], "tags": ["quick"]}
            ).status_code
            == 404
        )
        bad = client.post(f"{url}/v1/dev/evals/runs", json={"filterIds": "held"})
        assert bad.status_code == 400 and bad.json()["ok"] is False

        started = client.post(f"{url}/v1/dev/evals/runs", json={"filterIds": ["held"]})
        assert started.status_code == 202, started.text
        snap = started.json()
        run_id = snap["runId"]
        assert snap["status"] == "running" and [c["id"] for c in snap["cases"]] == ["held"]

        assert snap["cases"][0]["status"] in ("pending", "running")
        # progress per case: the held case shows as running while the gate is shut
        deadline = time.monotonic() + 120
        while (
            client.get(f"{url}/v1/dev/evals/runs/{run_id}").json()["cases"][0]["status"]
            != "running"
        ):
            assert time.monotonic() < deadline, "the held case never showed as running"
            time.sleep(0.05)

        again = client.post(f"{url}/v1/dev/evals/runs", json={})
        assert again.status_code == 409 and again.json()["ok"] is False
        listed = client.get(f"{url}/v1/dev/evals/runs").json()
        assert listed["activeRunId"] == run_id

        (tmp_path / "gate").write_text("open")
        done = wait_done(client, url, run_id)
        assert done["status"] == "completed" and done["ok"] is True
        [held] = done["cases"]
        assert held["status"] == "passed" and held["sessionId"].startswith("ses_")
        assert held["usage"]["inputTokens"] > 0 and held["durationMs"] >= 0

        assert client.get(f"{url}/v1/dev/evals/runs/run_0000000000000000").status_code == 404
        assert client.get(f"{url}/v1/dev/evals/runs/..%2Fsecret").status_code == 404

        # Two more runs: only the newest two are kept in memory, newest first.
        ids = [run_id]
        for _ in range(2):
            r = client.post(f"{url}/v1/dev/evals/runs", json={"tags": ["quick"]})
            assert r.status_code == 202, r.text
            ids.append(r.json()["runId"])
            finished = wait_done(client, url, ids[-1])
            assert finished["status"] == "completed" and finished["ok"] is False
            assert {c["id"]: c["status"] for c in finished["cases"]} == {
                "quick/one": "passed",
                "quick/two": "failed",
            }
        listed = client.get(f"{url}/v1/dev/evals/runs").json()
        assert [r["runId"] for r in listed["runs"]] == [ids[2], ids[1]]
        assert "activeRunId" not in listed
        assert client.get(f"{url}/v1/dev/evals/runs/{run_id}").status_code == 404
    finally:
        served.stop()
    assert "Traceback" not in served.output(), served.output()


def test_persisted_runs_survive_a_restart_and_a_killed_run_ends_failed(
    tmp_path: Path, client: httpx.Client
) -> None:
    served = serve(tmp_path, "max_concurrency=2, persist_runs=True")
    try:
        url = served.url
        assert client.get(f"{url}/v1/dev/evals").json()["config"]["durableRuns"] is True
        first = client.post(f"{url}/v1/dev/evals/runs", json={"filterIds": ["quick/one"]})
        assert first.status_code == 202
        done = wait_done(client, url, first.json()["runId"])
        assert done["status"] == "completed"

        held = client.post(f"{url}/v1/dev/evals/runs", json={"tags": ["gate"]}).json()["runId"]
        served.kill9()  # the run dies with its process
        served.start()
        url = served.url

        again = client.get(f"{url}/v1/dev/evals/runs/{done['runId']}").json()
        assert again["status"] == "completed" and again["cases"] == done["cases"]
        killed = client.get(f"{url}/v1/dev/evals/runs/{held}").json()
        assert killed["status"] == "failed"
        assert any("stopped" in e for e in killed["errors"])
        listed = client.get(f"{url}/v1/dev/evals/runs").json()
        assert [r["runId"] for r in listed["runs"]] == [held, done["runId"]]
        assert "activeRunId" not in listed
        # A new run can start: the dead one holds nothing.
        assert client.post(f"{url}/v1/dev/evals/runs", json={"tags": ["quick"]}).status_code == 202
    finally:
        served.stop()


class _LambdaLikeHost:
    """A host with a bundle and nothing to run evals on (no state directory, no launcher)."""

    def __init__(self, bundle: Any) -> None:
        from agentkit.evals.runs import EvalRunService

        self.eval_runs = EvalRunService(bundle, state_dir=None, can_run=False)


async def test_a_host_without_local_state_lists_evals_but_refuses_to_run_them(
    tmp_path: Path,
) -> None:
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle
    from agentkit.server.app import create_app
    from agentkit.server.options import AgentMount, ServerOptions
    from agentkit.store.memory import MemoryStore

    bundle = AgentBundle.discover(
        write_project(tmp_path / SLUG, EVALS, extra={"agent/tools/hold_gate.py": HOLD})
    )
    runtime = AgentRuntime(bundle, MemoryStore(), state_root=tmp_path / "state")
    app = create_app([AgentMount(SLUG, runtime, host=_LambdaLikeHost(bundle))], ServerOptions())
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        listing = (await c.get(f"/{SLUG}/v1/dev/evals")).json()
        assert len(listing["evals"]) == 3
        refused = await c.post(f"/{SLUG}/v1/dev/evals/runs", json={})
        assert refused.status_code == 501
        assert refused.json()["error"] == "eval_runs_unavailable"
        assert (await c.get(f"/{SLUG}/v1/dev/evals/runs")).json()["runs"] == []
        # Outside loopback the same auth chain as every route applies.
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        assert (await c.get(f"/{SLUG}/v1/dev/evals")).status_code == 401
        assert (await c.post(f"/{SLUG}/v1/dev/evals/runs", json={})).status_code == 401
