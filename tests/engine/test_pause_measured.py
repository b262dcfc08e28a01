"""Measured: a pause stops a turn before its next model call, on the file store and on
DynamoDB (a moto server over HTTP). The figures are printed by bench/bench_pause.py; here
only what must hold: no model call after the pause, and the turn ended soon after it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.store.base import Store
from agentkit.store.files import FileStore

from .pause_rig import Where, measure_pause, write_agent


@pytest.fixture(params=["files", "dynamodb"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "files":
        return lambda: FileStore(tmp_path / "state")
    factory: Callable[..., Any] = request.getfixturevalue("dynamodb_store_factory")
    return factory


@pytest.mark.parametrize("where", ["model", "tool"])
async def test_no_model_call_follows_a_pause(
    store_factory: Callable[[], Store], tmp_path: Path, where: Where
) -> None:
    bundle = write_agent(tmp_path / "proj")
    store = store_factory()
    try:
        measured = await measure_pause(bundle, store, tmp_path / "state", where)
    finally:
        await store.close()
    assert measured.calls_before >= 3
    assert measured.calls_after == 0
    assert measured.last_call_after_pause < 0
    assert measured.turn_error == "session paused"
    # Far inside the 5 s the pause promises (a running tool's grace is 0.5 s here).
    assert measured.stopped_after < 5.0
