"""Eval runs through the client, against an embedded server: list, start, conflict-free
polling to the end, and the server's 404 for a run request that matches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentkit
from agentkit.client import NotFoundError
from tests.evals.conftest import case, write_project
from tests.fixtures.http_server import SLUG

EVALS = {
    "quick/one.eval.py": case('define_eval(message="hi", tags=["quick"])'),
    "quick/two.eval.py": case(
        'define_eval(message="Weather in Rome?", tags=["quick"], '
        'assertions=[reply_contains("a zebra")])'
    ),
}


async def test_eval_runs_through_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", "test")
    project = write_project(tmp_path / SLUG, EVALS)
    async with (
        agentkit.serve(project, state_root=tmp_path / "state") as handle,
        handle.client() as client,
    ):
        listing = await client.evals()
        assert [e["id"] for e in listing["evals"]] == ["quick/one", "quick/two"]
        with pytest.raises(NotFoundError) as nothing:
            await client.start_eval_run(tags=["nope"])
        assert nothing.value.status == 404

        started = await client.start_eval_run(tags=["quick"])
        done = await client.wait_eval_run(started["runId"], poll=0.05, timeout=120)
        assert done["status"] == "completed"
        outcome = {c["id"]: c["status"] for c in done["cases"]}
        assert outcome == {"quick/one": "passed", "quick/two": "failed"}  # no zebra
        runs = await client.eval_runs()
        assert runs["runs"][0]["runId"] == started["runId"]
