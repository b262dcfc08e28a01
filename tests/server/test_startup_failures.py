"""Start-up failures of `agentkit serve` are one clear line and a non-zero exit, with
nothing before it that claims the server is serving."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.http_server import ServeFactory, write_agent

pytestmark = pytest.mark.slow(reason="starts agentkit serve on broken projects")


def _serve(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, AGENTKIT_MODEL="test")
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", "serve", "--dir", str(project), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _says_it_serves(output: str) -> bool:
    return " at http://" in output or "Uvicorn running" in output or "Application startup" in output


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    project = write_agent(tmp_path / "helpdesk")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = _serve(project, "--port", str(port), "--state-root", str(tmp_path / "state"))
    assert out.returncode == 1
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert f"port {port} on 127.0.0.1 is already in use" in lines[0]
    assert "--port" in lines[0]  # what to do
    assert not _says_it_serves(out.stdout + out.stderr)


def test_a_state_folder_served_by_another_process_is_one_line(
    serve: ServeFactory, tmp_path: Path, agent_project: Path
) -> None:
    running = serve()
    out = _serve(agent_project, "--port", "0", "--state-root", str(running.state_root))
    assert out.returncode == 1
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert "is already served by another agentkit process" in lines[0]
    assert "--state-root" in lines[0]
    assert not _says_it_serves(out.stdout + out.stderr)
    assert "Traceback" not in out.stderr


def test_an_agent_folder_with_errors_ends_in_one_line_saying_what_to_do(tmp_path: Path) -> None:
    project = write_agent(tmp_path / "helpdesk")
    (project / "agent" / "tools" / "broken.py").write_text("def broken(:\n")
    out = _serve(project, "--port", "0", "--state-root", str(tmp_path / "state"))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert "agent/tools/broken.py" in out.stderr  # the diagnostics come first
    assert "has 1 error(s) in its agent folder" in lines[-1]
    assert "agentkit validate" in lines[-1]
    assert not _says_it_serves(out.stdout + out.stderr)


def test_the_banner_comes_once_the_port_is_bound(serve: ServeFactory) -> None:
    running = serve()
    assert f"helpdesk at http://127.0.0.1:{running.port}/" in running.output()
