"""Tools cannot starve the server: sync tools run in a bounded pool of their own, the store
in threads of its own, and a full tool pool refuses new calls instead of queueing them."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkit import ToolContext, define_tool
from agentkit.authoring.contexts import HostServices
from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.tools import pool as toolpool
from agentkit.engine.tools.calls import ToolEntry, invoke
from agentkit.engine.tools.pool import ToolPool
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


async def test_sync_calls_that_timed_out_keep_their_threads_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: sync tools that time out keep running in their threads; once they
    fill the pool, the next call is refused at once instead of queueing behind them."""
    pool = ToolPool(2)
    monkeypatch.setattr(toolpool, "_POOL", pool)
    release = threading.Event()
    ran: list[str] = []

    class Hang(BaseModel):
        label: str

    @define_tool(description="Blocks its thread until released.")
    def hang(input: Hang, ctx: ToolContext) -> str:
        ran.append(input.label)
        release.wait(120)
        return "released"

    entry = ToolEntry("hang", "blocks", {}, input_model=Hang, definition=hang)
    try:
        for label in ("a", "b"):
            _, value = entry.validate({"label": label})
            ctx = ToolContext(None, HostServices(), f"c{label}", "hang", tmp_path)
            out = await invoke(entry, value, ctx, timeout=0.5)
            assert out.is_error and out.error == "tool 'hang' timed out after 0.5s"
        assert pool.busy == 2  # both timed-out calls still hold their threads
        _, value = entry.validate({"label": "c"})
        ctx = ToolContext(None, HostServices(), "cc", "hang", tmp_path)
        out = await asyncio.wait_for(invoke(entry, value, ctx, timeout=60), 30)
        assert out.is_error and (out.error or "").startswith("tool pool saturated")
        assert sorted(ran) == ["a", "b"]  # the refused call never ran
    finally:
        release.set()
    for _ in range(6000):
        if pool.busy == 0:
            break
        await asyncio.sleep(0.01)
    assert pool.busy == 0
