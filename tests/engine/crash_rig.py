"""A real process that runs an approved side-effecting call and is killed (`kill -9`)
while the call runs, then the checks that it never runs again.

`python -m tests.engine.crash_rig <project> <state> <session> <turn>` resolves the parked
approval of call `d1` and runs the turn; the `deploy` tool appends one line to
`<project>/deploys.log` and then blocks, so the parent can kill the process mid-call.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.files import FileStore

OWNER = Principal("alice")
ROOT = Path(__file__).resolve().parents[2]

PROJECT = {
    "agent/instructions.md": "# Crash test agent\n",
    "agent/agent.py": """
        from agentkit import define_agent
        agent = define_agent(max_steps=4, tool_timeout=120)
    """,
    "agent/tools/deploy.py": """
        import os, time
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class DeployInput(BaseModel):
            env: str

        @define_tool(description="Deploy (appends one line per run).", needs_approval=True)
        def deploy(input: DeployInput, ctx) -> dict:
            log = Path(__file__).resolve().parents[2] / "deploys.log"
            with log.open("a") as f:
                f.write(input.env + "\\n")
                f.flush()
                os.fsync(f.fileno())
            if os.environ.get("CRASH_RIG_BLOCK"):
                time.sleep(600)  # killed here
            return {"deployed": input.env}
    """,
    "agent/tools/hold.py": """
        import time
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class HoldInput(BaseModel):
            pass

        @define_tool(description="Signal it runs, then wait for the release file.")
        def hold(input: HoldInput, ctx) -> str:
            root = Path(__file__).resolve().parents[2]
            (root / "holding").touch()
            deadline = time.monotonic() + 120
            while not (root / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return "released"
    """,
}


def write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def runtime(project: Path, state: Path, steps: list[Step], **options: object) -> AgentRuntime:
    model = ScriptedModel(steps)
    return AgentRuntime(
        AgentBundle.discover(project),
        FileStore(state),
        model_resolver=lambda _id: model,  # type: ignore[arg-type,return-value]
        state_root=state,
        **options,  # type: ignore[arg-type]
    )


async def drain(rt: AgentRuntime) -> None:
    d = rt.dispatcher
    assert isinstance(d, LocalDispatcher)
    await d.drain()


async def park(project: Path, state: Path) -> tuple[str, str, str]:
    """Start a session whose turn parks on `deploy` (call `d1`)."""
    rt = runtime(project, state, [Step.tool_calls(call("deploy", {"env": "prod"}, id="d1"))])
    acc = await rt.start_session("ship it", principal=OWNER)
    await drain(rt)
    await rt.store.close()
    return acc.session_id, acc.turn_id, acc.continuation_token


def deploys(project: Path) -> int:
    log = project / "deploys.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def start_child(
    project: Path, state: Path, session_id: str, turn_id: str
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CRASH_RIG_BLOCK": "1", "PYTHONPATH": str(ROOT)}
    args = [str(project), str(state), session_id, turn_id]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_rig", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def kill_mid_call(project: Path, state: Path, session_id: str, turn_id: str, before: int) -> None:
    """Run the approved call in a child and `kill -9` it once the side effect happened."""
    child = start_child(project, state, session_id, turn_id)
    try:
        deadline = time.monotonic() + 60
        while deploys(project) <= before:
            if child.poll() is not None:
                err = child.stderr.read().decode() if child.stderr else ""
                raise AssertionError(f"the child ended before the call ran: {err}")
            if time.monotonic() > deadline:
                raise AssertionError("the approved call never ran")
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stderr is not None:
            child.stderr.close()


async def _child(project: Path, state: Path, session_id: str, turn_id: str) -> None:
    rt = runtime(project, state, [Step.text("deployed")], lease_ttl=1.0)
    await rt.resolve_approval(session_id, "d1", "approve", principal=OWNER)
    await drain(rt)
    del turn_id


async def _hold(project: Path, state: Path) -> None:
    """Like `agentkit run`: one turn in this process over the state folder, no serve lock."""
    steps = [Step.tool_calls(call("hold", {}, id="h1")), Step.text("held")]
    rt = runtime(project, state, steps, lease_ttl=2.0)
    acc = await rt.start_session("hold on", principal=OWNER)
    print(acc.session_id, acc.turn_id, flush=True)
    await drain(rt)


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        asyncio.run(_hold(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        p, s, sid, tid = sys.argv[1:5]
        asyncio.run(_child(Path(p), Path(s), sid, tid))
