"""docs/getting-started.md shows each command with its real output: the commands of its
console blocks are run here, from a fresh folder, and what they print is compared with
what the page shows (ids, ports, process ids and dice rolls aside)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served

pytestmark = pytest.mark.slow(reason="re-runs the getting-started path in subprocesses")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"


def console_blocks() -> dict[str, list[str]]:
    """Each `$ command` of the page's console blocks, with the lines printed after it."""
    out: dict[str, list[str]] = {}
    for block in re.findall(r"```console\n(.*?)```", PAGE.read_text(), re.S):
        command: str | None = None
        for line in block.splitlines():
            if line.startswith("$ "):
                command = line[2:].strip()
                out[command] = []
            elif command is not None:
                out[command].append(line)
    return out


def agentkit(cwd: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTKIT_MODEL"}
    env["NO_COLOR"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (proc.stdout + proc.stderr).splitlines()


def shape(value: Any) -> Any:
    """The keys and the kinds of a JSON value, for output whose values differ each run."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def test_the_page_shows_what_the_commands_print(tmp_path: Path) -> None:
    shown = console_blocks()
    assert {"agentkit init my-agent", "agentkit validate", "agentkit serve"} <= set(shown)

    assert agentkit(tmp_path, "init", "my-agent") == shown["agentkit init my-agent"]
    project = tmp_path / "my-agent"
    assert agentkit(project, "validate") == shown["agentkit validate"]
    assert agentkit(project, "--version") == shown["agentkit --version"]

    [run] = [c for c in shown if c.startswith("agentkit run ")]
    message = run.removeprefix("agentkit run ").strip('"')
    printed = json.loads("\n".join(agentkit(project, "run", message)))
    documented = json.loads("\n".join(shown[run]))
    assert shape(printed) == shape(documented)
    for key in ("status", "model", "turns"):
        assert printed[key] == documented[key]
    assert [c["toolName"] for c in printed["toolCalls"]] == ["roll_dice"]

    build = "agentkit build --out build --target aws"
    assert agentkit(project, *build.split()[1:]) == shown[build]


def test_the_serve_banner_on_the_page_is_the_real_one(tmp_path: Path) -> None:
    assert (
        subprocess.run(
            [sys.executable, "-m", "agentkit.cli", "init", str(tmp_path / "my-agent")],
            capture_output=True,
            timeout=120,
        ).returncode
        == 0
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTKIT_MODEL"}
    served = Served(tmp_path / "my-agent", tmp_path / "state", [], env).start()
    try:
        # The banner's `try` line works as printed, as the page says.
        r = httpx.post(f"{served.root_url}/my-agent/v1/session", json={"message": "hello"})
        assert r.status_code == 200, r.text
    finally:
        served.stop()
    printed = [
        line.replace(f":{served.port}/", ":3000/")
        for line in served.output().splitlines()
        if line.startswith(("agentkit: ", "  "))
    ]
    documented = [
        line for line in console_blocks()["agentkit serve"] if not line.startswith("INFO:")
    ]
    assert printed[: len(documented)] == documented
