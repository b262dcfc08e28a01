"""A project made by `agentkit init` deploys on its own: it installs with pip, and
`sam validate --lint` and `sam build` run in it with agentkit taken from a package index
(here a folder holding the wheel of this checkout), no checkout of agentkit involved."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.aws.project_files import layer_makefile, template_yaml

pytestmark = pytest.mark.slow(reason="runs sam build on a fresh scaffold")

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv-aws" / "bin" / "sam"


def test_this_repository_deploys_the_template_init_writes() -> None:
    assert (ROOT / "template.yaml").read_text(encoding="utf-8") == template_yaml()
    assert (ROOT / "layers" / "Makefile").read_text(encoding="utf-8") == layer_makefile()


def _init(tmp_path: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "agentkit", "init", "my-agent"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return tmp_path / "my-agent"


@pytest.mark.timeout(300)
def test_the_scaffold_installs_with_pip(tmp_path: Path) -> None:
    project = _init(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(tmp_path / "site"),
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    [dist_info] = (tmp_path / "site").glob("my_agent-*.dist-info")
    requires = (dist_info / "METADATA").read_text(encoding="utf-8")
    assert "Requires-Dist: agentkit-serverless>=" in requires


def _lambda_python() -> Path | None:
    proc = subprocess.run(
        ["sh", str(ROOT / ".ci" / "which-python"), "python3.12"], capture_output=True, text=True
    )
    return Path(proc.stdout.strip()) if proc.returncode == 0 else None


@pytest.mark.timeout(900)  # a wheel build, then the layer's whole dependency set
def test_sam_builds_the_scaffold_with_agentkit_from_the_index(tmp_path: Path) -> None:
    python312 = _lambda_python()
    if not SAM.exists() or python312 is None:
        pytest.skip("needs sam (make aws-tools) and python3.12")
    index = tmp_path / "index"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--outdir",
            str(index),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    project = _init(tmp_path)
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    env["PATH"] = os.pathsep.join(
        [str(python312.parent), str(Path(sys.executable).parent), env["PATH"]]
    )
    env["PIP_FIND_LINKS"] = " ".join([str(index), env.get("PIP_FIND_LINKS", "")]).strip()
    for command in (["validate", "--lint"], ["build"]):
        proc = subprocess.run(
            [str(SAM), *command, "--region", "us-east-1"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = project / ".aws-sam" / "build"
    for function in ("ApiFunction", "TurnFunction", "HooksFunction", "SchedulerFunction"):
        assert (built / function / "agent" / "tools" / "roll_dice.py").is_file()
        assert (built / function / "manifest.json").is_file()
        assert not (built / function / "agentkit").exists()  # it comes from the layer
    layer = built / "DepsLayer" / "python"
    assert (layer / "agentkit" / "aws" / "handlers" / "api.py").is_file()
    assert list(layer.glob("agentkit_serverless-*.dist-info"))
    shutil.rmtree(built)
