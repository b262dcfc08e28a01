"""`agentkit serve` starting on a state folder leaves the live lease of a concurrent
`agentkit run` (another process, no serve lock) alone: that run's turn completes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from agentkit.hosts.local import LocalHost
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore

from .crash_rig import ROOT, write_project


def spawn_run(project: Path, state: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_rig", "hold", str(project), str(state)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def test_serve_does_not_release_a_live_run_lease(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj")
    state = project / ".agentkit"
    child = spawn_run(project, state)
    host: LocalHost | None = None
    try:
        assert child.stdout is not None
        line = await asyncio.to_thread(child.stdout.readline)
        session_id, turn_id = line.decode().split()
        deadline = time.monotonic() + 60
        while not (project / "holding").exists():
            assert child.poll() is None and time.monotonic() < deadline, "the run never held"
            await asyncio.sleep(0.01)
        host = LocalHost(AgentBundle.discover(project))
        await host.start()  # releases leases of dead processes, recovers, sweeps
        lease = await host.store.get_lease(session_id)
        assert lease is not None and lease.pid == child.pid
        (project / "release").touch()
        assert await asyncio.to_thread(child.wait, 120) == 0
    finally:
        if host is not None:
            await host.aclose()
        if child.poll() is None:
            child.kill()
            child.wait()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    store = FileStore(state)
    events = await store.read(session_id)
    await store.close()
    kinds = [e.type for e in events if e.turn_id == turn_id]
    assert "turn.failed" not in kinds
    assert kinds.count("turn.completed") == 1
    results = [e.data for e in events if e.type == "action.result"]
    assert [r.get("result") for r in results] == ["released"]
