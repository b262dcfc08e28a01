"""The `examples/units` agent: its pinned stdio MCP server, called by the test model and
by a server tool through `ctx.host.mcp`, with `agentkit run` and `agentkit validate`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.http_server import _env as serve_env

pytestmark = pytest.mark.slow(reason="serves the example agent's MCP connections")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "units"


def agentkit(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from agentkit.cli import main; sys.exit(main())",
            *args,
            "--dir",
            str(project),
        ],
        capture_output=True,
        text=True,
        env=serve_env({"UNITS_PRECISION": "2"}),
        timeout=180,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "units"))


def run(project: Path, message: str) -> dict[str, Any]:
    done = agentkit(project, "run", message)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_model_calls_the_pinned_mcp_tool(project: Path) -> None:
    calls = run(project, "How many miles is 10 km?")["toolCalls"]
    assert [(c["toolName"], c["result"]) for c in calls] == [
        ("mcp__units__km_to_miles", {"result": 6.21})
    ]


def test_server_tool_uses_host_mcp(project: Path) -> None:
    calls = run(project, "Give me a trip summary")["toolCalls"]
    assert calls[0]["toolName"] == "trip_summary"
    args = calls[0]["arguments"]
    assert calls[0]["result"] == {
        "miles": round(args["km"] * 0.621371, 2),
        "fahrenheit": round(args["celsius"] * 9 / 5 + 32, 2),
    }


def test_the_committed_lock_matches_the_server(project: Path) -> None:
    checked = agentkit(project, "validate")
    assert checked.returncode == 0, checked.stdout
    assert "mcp.lock_drift" not in checked.stdout and "mcp.env_unset" not in checked.stdout
