"""What `make serve` and `make aws-build` would install on a fresh clone (`make -n` prints
the commands without running them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(target: str, tmp_path: Path) -> str:
    fresh = {
        "VENV": str(tmp_path / "venv"),
        "AWS_VENV": str(tmp_path / "aws"),
        "SCAN_VENV": str(tmp_path / "scan"),
        "UV": "",
    }
    proc = subprocess.run(
        ["make", "-n", "-B", "-C", str(ROOT), target, *(f"{k}={v}" for k, v in fresh.items())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_serve_installs_the_core_dependencies_only(tmp_path: Path) -> None:
    commands = dry_run("serve", tmp_path)
    assert "pip install -q -e ." in commands
    assert "[dev]" not in commands
    assert "agentkit serve --dir examples/weather --dev" in commands


def test_test_installs_the_dev_toolchain(tmp_path: Path) -> None:
    assert "-e '.[dev]'" in dry_run("test", tmp_path)


def test_aws_build_does_not_install_the_scanner(tmp_path: Path) -> None:
    commands = dry_run("aws-build", tmp_path)
    assert "aws-sam-cli" in commands
    assert "checkov" not in commands
