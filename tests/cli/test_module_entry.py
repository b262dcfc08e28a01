"""`python -m agentkit` is the same CLI as the `agentkit` script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentkit import __version__


def test_python_dash_m_agentkit_runs_the_cli(tmp_path: Path) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "agentkit", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert version.stdout.strip() == f"agentkit {__version__}"
    init = subprocess.run(
        [sys.executable, "-m", "agentkit", "init", "demo", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "demo" / "agent" / "agent.py").is_file()
