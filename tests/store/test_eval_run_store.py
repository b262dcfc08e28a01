"""The `EvalRunStore` contract: the same on memory, files and DynamoDB (moto server).

A run snapshot is a JSON object keyed by its `runId`: stored whole, replaced whole, read
back equal (also by a fresh store over the same state), listed newest first. A snapshot
too large for one DynamoDB item as text still round-trips.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from agentkit.errors import InvalidId
from agentkit.store.base import EvalRunStore
from tests.store.conftest import Harness


def snapshot(run_id: str, created: str, **extra: Any) -> dict[str, Any]:
    return {
        "runId": run_id,
        "status": "running",
        "createdAt": created,
        "cases": [{"id": "a/b", "status": "pending", "cost": None, "usage": {"inputTokens": 3}}],
        "errors": [],
        **extra,
    }


async def test_the_adapter_implements_the_eval_run_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, EvalRunStore)


async def test_eval_runs_are_stored_replaced_and_listed_newest_first(harness: Harness) -> None:
    store = harness.store
    assert await store.list_eval_runs() == []
    assert await store.get_eval_run("run_missing") is None
    old = snapshot("run_0001", "2030-01-01T00:00:00.000Z")
    new = snapshot("run_0002", "2030-01-02T00:00:00.000Z", note="ünïcode ✓")
    await store.put_eval_run(old)
    await store.put_eval_run(new)
    assert await store.get_eval_run("run_0001") == old
    assert [s["runId"] for s in await store.list_eval_runs()] == ["run_0002", "run_0001"]

    done = {**old, "status": "completed", "ok": True, "finishedAt": "2030-01-01T00:01:00.000Z"}
    await store.put_eval_run(done)
    assert await harness.reopen().get_eval_run("run_0001") == done
    assert await harness.reopen().list_eval_runs() == [new, done]


async def test_a_stored_snapshot_is_not_shared_with_the_caller(harness: Harness) -> None:
    snap = snapshot("run_0003", "2030-01-01T00:00:00.000Z")
    await harness.store.put_eval_run(snap)
    snap["cases"][0]["status"] = "changed after put"
    got = await harness.store.get_eval_run("run_0003")
    assert got is not None and got["cases"][0]["status"] == "pending"


async def test_a_large_snapshot_round_trips(harness: Harness) -> None:
    # ~600 KB of case failures, mostly incompressible: too large as text for one item.
    cases = [{"id": f"case{i:04d}", "failures": [secrets.token_hex(150)] * 2} for i in range(1000)]
    big = snapshot("run_0004", "2030-01-01T00:00:00.000Z", cases=cases)
    await harness.store.put_eval_run(big)
    assert await harness.reopen().get_eval_run("run_0004") == big


@pytest.mark.parametrize("bad", ["", "../escape", "run/../../x", "a" * 300])
async def test_bad_run_ids_are_refused(harness: Harness, bad: str) -> None:
    with pytest.raises(InvalidId):
        await harness.store.put_eval_run(snapshot(bad, "2030-01-01T00:00:00.000Z"))
    with pytest.raises(InvalidId):
        await harness.store.get_eval_run(bad)
