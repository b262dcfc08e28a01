"""Item 1: files a caller sends (`workspaceFiles`) never become code, and an agent tool's
process sees only the environment it is allowed, dies with its whole group, and cannot
flood the server with output."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.engine.tools.agent_tool import MAX_OUTPUT_BYTES, run_agent_tool
from agentkit.engine.tools.child_process import run_child
from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.server.helpers import start_session

PROBE = """
    import json
    import os
    import subprocess
    import sys
    import time

    from pydantic import BaseModel
    from agentkit import define_tool


    class ProbeInput(BaseModel):
        mode: str = "report"


    @define_tool(
        description="Probe the process the tool runs in.",
        execution="agent",
        env=["PROBE_DECLARED"],
    )
    def probe(input: ProbeInput, ctx) -> dict:
        if input.mode == "hang":
            # A grandchild in the same group, then wait: only a group kill ends both.
            child = subprocess.Popen(["sleep", "300"])
            with open("pids.json", "w") as f:
                json.dump({"tool": os.getpid(), "grandchild": child.pid}, f)
            time.sleep(300)
        if input.mode == "flood":
            sys.stdout.write("x" * (3 * 1024 * 1024))
            sys.stdout.flush()
        try:  # found only through PYTHONPATH, as packages are on Lambda
            import probe_lib

            lib = probe_lib.VALUE
        except ImportError:
            lib = None
        return {
            "lib": lib,
            "secret": os.environ.get("PROBE_SECRET"),
            "aws": os.environ.get("AWS_SECRET_ACCESS_KEY"),
            "declared": os.environ.get("PROBE_DECLARED"),
            "home": os.environ.get("HOME"),
            "cwd": os.getcwd(),
            "cwdOnPath": [p for p in sys.path if p in ("", ".", os.getcwd())],
            "text": "a\\u2028b\\u2029c\\u0085d",
        }
"""


def _marker_code(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('pwned')\n"


def _attack_files(markers: Path) -> dict[str, str]:
    """Files an attacker sends so that any import from the workspace leaves a marker."""
    names = {
        "json.py": "json",
        "pydantic/__init__.py": "pydantic",
        "agentkit/__init__.py": "agentkit",
        "agent/__init__.py": "agent-pkg",
        "agent/tools/probe.py": "tool",
        "agent/tools/__init__.py": "tools-pkg",
        "sitecustomize.py": "sitecustomize",
        "usercustomize.py": "usercustomize",
        ".agentkit/tools/probe.py": "tool-copy",
        "probe_lib.py": "probe-lib",
    }
    return {rel: _marker_code(markers / name) for rel, name in names.items()}


@pytest.fixture
def probe_server(tmp_path: Path) -> Any:
    project = write_agent(tmp_path / SLUG, {**AGENT_FILES, "agent/tools/probe.py": PROBE})
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "probe_lib.py").write_text("VALUE = 'from-pythonpath'\n")
    env = _env(
        {
            "PYTHONPATH": str(libs),
            "PROBE_SECRET": "provider-key-123",
            "PROBE_DECLARED": "declared-ok",
            "AWS_SECRET_ACCESS_KEY": "role-secret",
        }
    )
    served = Served(project, tmp_path / "state", [], env).start()
    yield served
    served.stop()


def _result_of(client: httpx.Client, url: str, session_id: str, tool: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r = client.get(f"{url}/v1/session/{session_id}/events")
        events = [json.loads(line) for line in r.text.split("\n") if line]
        for e in events:
            if e["type"] == "action.result" and e["data"]["toolName"] == tool:
                return dict(e["data"])
        if any(e["type"] in ("turn.completed", "turn.failed") for e in events):
            raise AssertionError(f"turn ended without a {tool} result: {events}")
        time.sleep(0.2)
    raise AssertionError("no tool result in time")


def test_workspace_files_never_run_as_code_over_http(probe_server: Served, tmp_path: Path):
    markers = tmp_path / "markers"
    markers.mkdir()
    with httpx.Client(timeout=60) as client:
        body = start_session(
            client, probe_server.url, "probe it", workspaceFiles=_attack_files(markers)
        )
        data = _result_of(client, probe_server.url, body["sessionId"], "probe")
    assert sorted(p.name for p in markers.iterdir()) == []
    assert data["isError"] is False, data
    result = data["result"]
    # The real tool ran (not the attacker's copy), with an allow-listed environment.
    assert result["secret"] is None
    assert result["aws"] is None
    assert result["declared"] == "declared-ok"
    assert result["home"] == result["cwd"]
    assert result["cwdOnPath"] == []
    # The server's own import path (PYTHONPATH included) still reaches the tool.
    assert result["lib"] == "from-pythonpath"
    # Line separators inside a result survive the reply line intact.
    assert result["text"] == "a\u2028b\u2029c\u0085d"


def _read_pids(pattern_root: Path, name: str) -> dict[str, int] | None:
    """The pid file under `pattern_root` (any depth), once fully written."""
    for path in pattern_root.rglob(name):
        try:
            pids = dict(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue  # half written
        if len(pids) == 2:
            return pids
    return None


async def _wait_for(root: Path, name: str = "pids.json") -> dict[str, int]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = _read_pids(root, name)
        if pids is not None:
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {name} under {root}")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def _all_dead(pids: list[int], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def probe_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    path = root / "agent" / "tools" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(PROBE).lstrip())
    return root


def _run(project: Path, workspace: Path, mode: str, timeout: float = 120.0) -> Any:
    workspace.mkdir(exist_ok=True)
    return run_agent_tool(
        "agent.tools.probe",
        "probe",
        "agent/tools/probe.py",
        {"mode": mode},
        workspace=workspace,
        project_root=project,
        timeout=timeout,
        call_id="call_1",
        env=["PROBE_DECLARED"],
    )


async def test_cancelling_the_call_kills_the_whole_group(
    probe_project: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    task = asyncio.create_task(_run(probe_project, workspace, "hang"))
    pids = await _wait_for(workspace)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _all_dead([pids["tool"], pids["grandchild"]])


async def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pidfile}; wait"
    ended = await run_child(
        ["sh", "-c", script],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        stdin=b"",
        timeout=1,
        max_stdout=1024,
        stderr_tail=100,
    )
    assert ended.timed_out
    grandchild = int(pidfile.read_text())
    assert await _all_dead([grandchild])


async def test_output_past_the_cap_is_an_error_result(probe_project: Path, tmp_path: Path):
    outcome = await _run(probe_project, tmp_path / "ws", "flood")
    assert outcome.is_error
    assert f"{MAX_OUTPUT_BYTES} bytes" in (outcome.error or "")


def test_a_tool_file_outside_the_project_is_refused(probe_project: Path, tmp_path: Path):
    outside = tmp_path / "outside.py"
    outside.write_text("raise SystemExit('loaded from outside')\n")
    outcome = asyncio.run(
        run_agent_tool(
            "agent.tools.probe",
            "probe",
            "../outside.py",
            {},
            workspace=tmp_path,
            project_root=probe_project,
            timeout=120,
            call_id="call_2",
        )
    )
    assert outcome.is_error and "not a file inside" in (outcome.error or "")


def test_shutdown_kills_running_tool_groups(tmp_path: Path) -> None:
    """SIGINT to `agentkit serve` while an agent tool (and its child) run: both die."""
    hang = PROBE.replace('mode: str = "report"', 'mode: str = "hang"')
    project = write_agent(tmp_path / SLUG, {**AGENT_FILES, "agent/tools/probe.py": hang})
    served = Served(project, tmp_path / "state", [], _env({})).start()
    try:
        with httpx.Client(timeout=60) as client:
            start_session(client, served.url, "probe it")
        pids = asyncio.run(_wait_for(served.state_root))
        assert served.proc is not None
        served.proc.send_signal(signal.SIGINT)
        served.proc.wait(timeout=60)
        assert asyncio.run(_all_dead([pids["tool"], pids["grandchild"]]))
    finally:
        served.stop()


def test_stopping_the_session_kills_the_tool_group(tmp_path: Path) -> None:
    """`POST /v1/session/<id>/stop` while an agent tool (and its child) run: both die."""
    hang = PROBE.replace('mode: str = "report"', 'mode: str = "hang"')
    project = write_agent(tmp_path / SLUG, {**AGENT_FILES, "agent/tools/probe.py": hang})
    served = Served(project, tmp_path / "state", [], _env({})).start()
    try:
        with httpx.Client(timeout=60) as client:
            sid = start_session(client, served.url, "probe it")["sessionId"]
            pids = asyncio.run(_wait_for(served.state_root))
            stopped = client.post(f"{served.url}/v1/session/{sid}/stop")
            assert stopped.status_code == 200, stopped.text
            assert asyncio.run(_all_dead([pids["tool"], pids["grandchild"]]))
            # The server lives on and says how the call ended.
            data = _result_of(client, served.url, sid, "probe")
            assert data["isError"] is True, data
    finally:
        served.stop()
