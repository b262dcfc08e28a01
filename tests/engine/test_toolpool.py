"""Tools cannot starve the server: sync tools run in a bounded pool of their own, the store
in threads of its own, and a full tool pool refuses new calls instead of queueing them."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agentkit.engine import toolpool
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.toolpool import ToolPool
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore

from .conftest import ALICE, settle
from .test_preempt import effects, write


async def test_a_full_tool_pool_refuses_and_the_store_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = ToolPool(2)
    monkeypatch.setattr(toolpool, "_POOL", pool)
    project = write(tmp_path / "proj")
    steps = [Step.tool_calls(call("block", {"label": f"b{i}"}, id=f"c{i}")) for i in range(3)]
    model = ScriptedModel([*steps, Step.text("ok")])
    rt = AgentRuntime(
        AgentBundle.discover(project),
        FileStore(tmp_path / "state"),
        model_resolver=lambda _id: model,  # type: ignore[arg-type,return-value]
        state_root=tmp_path / "state",
    )
    # Every thread of the loop's default executor is stuck too (hung work elsewhere).
    loop = asyncio.get_running_loop()
    stuck = threading.Event()
    hogs = [loop.run_in_executor(None, stuck.wait, 120) for _ in range(64)]
    try:
        first = await rt.start_session("one", principal=ALICE)
        second = await rt.start_session("two", principal=ALICE)
        # Both calls hold their pool threads and have begun (each logs its label first,
        # from its own thread, so a slot taken is not yet a call that ran).
        for _ in range(6000):
            if pool.busy == 2 and sorted(effects(project)) == ["b0", "b1"]:
                break
            await asyncio.sleep(0.01)
        assert pool.busy == 2 and sorted(effects(project)) == ["b0", "b1"]
        # The store still answers at once: a new session, its message, its events.
        third = await asyncio.wait_for(rt.start_session("three", principal=ALICE), 30)
        for _ in range(3000):
            events = await rt.store.read(third.session_id)
            if any(e.type == "action.result" for e in events):
                break
            await asyncio.sleep(0.01)
        result = next(e for e in events if e.type == "action.result")
        assert result.data["isError"] is True
        assert result.data["error"].startswith("tool pool saturated")
        assert sorted(effects(project)) == ["b0", "b1"]  # the refused call never ran
    finally:
        (project / "release").touch()
        stuck.set()
        await asyncio.gather(*hogs)
    await asyncio.wait_for(settle(rt), 60)
    for acc in (first, second):
        events = await rt.store.read(acc.session_id)
        assert [e.data.get("result") for e in events if e.type == "action.result"] == ["released"]
    assert pool.busy == 0
