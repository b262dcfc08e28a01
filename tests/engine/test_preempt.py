"""A stop or a follow-up preempts running tools: after the agent's `stop_grace` the calls
are cancelled (sync ones abandoned in the tool pool), answered in doubt, and the turn ends
`turn interrupted`, instead of waiting for a tool that may never return."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from agentkit.engine.runtime import AgentRuntime
from agentkit.engine.tools.pool import tool_pool
from agentkit.engine.turn.ending import IN_DOUBT
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, settle

GRACE = 0.5

PROJECT = {
    "agent/instructions.md": "# Preempt test agent\n",
    "agent/agent.py": f"""
        from agentkit import define_agent
        agent = define_agent(max_steps=4, tool_timeout=120, stop_grace={GRACE})
    """,
    "agent/tools/hang.py": """
        import asyncio
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class HangInput(BaseModel):
            label: str

        @define_tool(description="Record a side effect, then never return.")
        async def hang(input: HangInput, ctx) -> str:
            with (Path(__file__).resolve().parents[2] / "effects.log").open("a") as f:
                f.write(input.label + "\\n")
            await asyncio.sleep(3600)
            return "unreachable"
    """,
    "agent/tools/block.py": """
        import time
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class BlockInput(BaseModel):
            label: str

        @define_tool(description="A sync tool that blocks its thread until released.")
        def block(input: BlockInput, ctx) -> str:
            with (Path(__file__).resolve().parents[2] / "effects.log").open("a") as f:
                f.write(input.label + "\\n")
            release = Path(__file__).resolve().parents[2] / "release"
            deadline = time.monotonic() + 120
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return "released"
    """,
    "agent/tools/spawn.py": """
        import os, subprocess, sys, time
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class SpawnInput(BaseModel):
            label: str

        @define_tool(description="Start a grandchild, then block.", execution="agent")
        def spawn(input: SpawnInput, ctx) -> str:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            root = Path(__file__).resolve().parents[2]
            (root / "pids").write_text(f"{os.getpid()} {child.pid}")
            with (root / "effects.log").open("a") as f:
                f.write(input.label + "\\n")
            time.sleep(600)
            return "unreachable"
    """,
    "agent/tools/polite.py": """
        import asyncio
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class PoliteInput(BaseModel):
            label: str

        @define_tool(description="Works until ctx.cancelled is set, then stops cleanly.")
        async def polite(input: PoliteInput, ctx) -> str:
            log = Path(__file__).resolve().parents[2] / "effects.log"
            with log.open("a") as f:
                f.write(input.label + "\\n")
            while not ctx.cancelled.is_set():
                await asyncio.sleep(0.01)
            with log.open("a") as f:
                f.write("cleaned up\\n")
            return "stopped cleanly"
    """,
}


def write(root: Path) -> Path:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def effects(project: Path) -> list[str]:
    log = project / "effects.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(params=["memory", "files"])
def make(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    project = write(tmp_path / "proj")

    def build(steps: list[Step]) -> tuple[AgentRuntime, Path]:
        model = ScriptedModel(steps)
        store = MemoryStore() if request.param == "memory" else FileStore(tmp_path / "state")
        rt = AgentRuntime(
            AgentBundle.discover(project),
            store,
            model_resolver=lambda _id: model,  # type: ignore[arg-type,return-value]
            state_root=tmp_path / "state",
        )
        return rt, project

    return build


async def until(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


async def stopped_turn(rt: AgentRuntime, sid: str, turn: str) -> list[dict[str, object]]:
    events = await rt.store.read(sid)
    kinds = [e.type for e in events if e.turn_id == turn]
    assert kinds.count("turn.failed") == 1
    failed = next(e for e in events if e.type == "turn.failed" and e.turn_id == turn)
    assert failed.data["error"] == "turn interrupted"
    return [e.data for e in events if e.type == "action.result" and e.turn_id == turn]


@pytest.mark.parametrize("tool", ["hang", "block"])
async def test_stop_cancels_a_tool_that_never_returns(make, tool: str) -> None:  # type: ignore[no-untyped-def]
    rt, project = make([Step.tool_calls(call(tool, {"label": "x"}, id="c1"))])
    acc = await rt.start_session("go", principal=ALICE)
    await until(lambda: effects(project) == ["x"])
    before = tool_pool().busy  # this call's thread included, for a sync tool
    stopped_at = time.monotonic()
    assert await rt.stop(acc.session_id, principal=ALICE)
    await asyncio.wait_for(settle(rt), 60)
    took = time.monotonic() - stopped_at
    (result,) = await stopped_turn(rt, acc.session_id, acc.turn_id)
    assert result["isError"] is True and result["error"] == IN_DOUBT
    assert effects(project) == ["x"]
    assert took < 30  # the tool would block for minutes; the bound is grace + 1 s
    if tool == "block":
        # The abandoned sync call still holds its pool thread, and is counted.
        assert tool_pool().busy == before
        (project / "release").touch()
        await until(lambda: tool_pool().busy == before - 1)


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_stop_kills_an_agent_execution_tool_and_what_it_started(make) -> None:  # type: ignore[no-untyped-def]
    rt, project = make([Step.tool_calls(call("spawn", {"label": "s"}, id="c1"))])
    acc = await rt.start_session("go", principal=ALICE)
    await until(lambda: effects(project) == ["s"])
    tool_pid, grandchild = (int(p) for p in (project / "pids").read_text().split())
    try:
        assert alive(tool_pid) and alive(grandchild)
        assert await rt.stop(acc.session_id, principal=ALICE)
        await asyncio.wait_for(settle(rt), 60)
        (result,) = await stopped_turn(rt, acc.session_id, acc.turn_id)
        assert result["isError"] is True and result["error"] == IN_DOUBT
        # The whole process group is gone: the tool's process and what it started.
        await until(lambda: not alive(tool_pid) and not alive(grandchild), timeout=30)
        assert effects(project) == ["s"]
    finally:
        for pid in (tool_pid, grandchild):  # only if the test failed: leave nothing behind
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


async def test_a_tool_watching_ctx_cancelled_stops_cleanly(make) -> None:  # type: ignore[no-untyped-def]
    rt, project = make([Step.tool_calls(call("polite", {"label": "p"}, id="c1"))])
    acc = await rt.start_session("go", principal=ALICE)
    await until(lambda: effects(project) == ["p"])
    await rt.stop(acc.session_id, principal=ALICE)
    await asyncio.wait_for(settle(rt), 60)
    (result,) = await stopped_turn(rt, acc.session_id, acc.turn_id)
    # It returned within the grace period: its own result is recorded, not "in doubt".
    assert result["isError"] is False and result["result"] == "stopped cleanly"
    assert effects(project) == ["p", "cleaned up"]


async def test_a_follow_up_preempts_a_hung_tool_instead_of_session_busy(make) -> None:  # type: ignore[no-untyped-def]
    rt, project = make([Step.tool_calls(call("hang", {"label": "h"}, id="c1")), Step.text("fresh")])
    acc = await rt.start_session("go", principal=ALICE)
    await until(lambda: effects(project) == ["h"])
    nxt = await asyncio.wait_for(
        rt.follow_up(acc.session_id, acc.continuation_token, "new", principal=ALICE), 60
    )
    await asyncio.wait_for(settle(rt), 60)
    (result,) = await stopped_turn(rt, acc.session_id, acc.turn_id)
    assert result["error"] == IN_DOUBT
    events = await rt.store.read(acc.session_id)
    assert "turn.completed" in [e.type for e in events if e.turn_id == nxt.turn_id]
    assert effects(project) == ["h"]
