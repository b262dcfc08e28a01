"""The session workspace: seeded lazily, with agent tools as scripts and a catalog."""

from __future__ import annotations

import asyncio
import json
import sys
from asyncio.subprocess import PIPE
from pathlib import Path

from agentkit.engine.tools.workspace import SEED_MARKER
from agentkit.models.scripted import Step, call
from tests.engine.conftest import ALICE, Env, settle


async def test_a_turn_without_agent_tools_seeds_nothing(env: Env) -> None:
    rt = env.runtime([Step.text("hello")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    workspace = rt.workspace(acc.session_id)
    # The file store makes the folder with the session; seeding waits for an agent tool.
    assert not (workspace / SEED_MARKER).exists()
    assert not (workspace / "AGENTS.md").exists()


async def test_agent_tools_land_as_scripts_with_a_catalog(env: Env, project: Path) -> None:
    rt = env.runtime(
        [Step.tool_calls(call("write_note", {"name": "out.txt", "text": "x"})), Step.text("ok")]
    )
    acc = await rt.start_session("note", principal=ALICE)
    await settle(rt)
    workspace = rt.workspace(acc.session_id)
    script = workspace / ".agentkit" / "tools" / "write_note.py"
    assert script.read_text() == (project / "agent/tools/write_note.py").read_text()
    agents_md = (workspace / "AGENTS.md").read_text()
    assert agents_md.startswith("# Test agent\n\nYou are a test agent.\n")
    assert "## Agent tools" in agents_md
    assert (
        "- `write_note`: Write a note file in the workspace. Script: "
        "`.agentkit/tools/write_note.py` (module `agent.tools.write_note`, "
        "function `write_note`)." in agents_md
    )
    # Server tools run in the host, not here: they are not catalogued.
    assert "`add`" not in agents_md
    assert not (workspace / ".agentkit" / "tools" / "add.py").exists()


async def test_the_catalogued_script_runs_by_hand_from_the_workspace(env: Env) -> None:
    rt = env.runtime(
        [Step.tool_calls(call("write_note", {"name": "a.txt", "text": "a"})), Step.text("ok")]
    )
    acc = await rt.start_session("note", principal=ALICE)
    await settle(rt)
    workspace = rt.workspace(acc.session_id)
    command = [
        sys.executable,
        "-m",
        "agentkit.engine.tools.agent_tool",
        "agent.tools.write_note",
        "write_note",
        ".agentkit/tools/write_note.py",
    ]
    stdin = json.dumps({"input": {"name": "by-hand.txt", "text": "typed"}})
    proc = await asyncio.create_subprocess_exec(
        *command, cwd=workspace, stdin=PIPE, stdout=PIPE, stderr=PIPE
    )
    stdout, stderr = await proc.communicate(stdin.encode())
    assert proc.returncode == 0, stderr.decode()
    assert json.loads(stdout) == {
        "ok": True,
        "result": {"wrote": "by-hand.txt", "cwd_has_agents_md": True},
    }
    assert (workspace / "by-hand.txt").read_text() == "typed"


def test_a_memory_store_workspace_follows_the_state_root(project: Path, tmp_path: Path) -> None:
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle
    from agentkit.store.memory import MemoryStore

    bundle = AgentBundle.discover(project)
    rt = AgentRuntime(bundle, MemoryStore(), state_root=tmp_path / "one")
    session_id = "ses_" + "w" * 22
    assert rt.workspace(session_id) == tmp_path / "one" / "sessions" / session_id / "workspace"
    rt.state_root = tmp_path / "two"  # the path computed before must not be served again
    assert rt.workspace(session_id) == tmp_path / "two" / "sessions" / session_id / "workspace"
