"""pyproject.toml states its licence the SPDX way, so building a wheel warns about nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_licence_is_an_spdx_expression() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["license"] == "Apache-2.0"
    # the string form needs setuptools 77 or newer at build time
    assert "setuptools>=77" in data["build-system"]["requires"]


ROOT = PYPROJECT.parent


def test_the_distribution_has_a_name_of_its_own() -> None:
    # `agentkit` on the public index is an unrelated project; the import name stays agentkit
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["name"] == "agentkit-serverless"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1
    assert (ROOT / "CHANGELOG.md").is_file()


def test_install_hints_name_the_distribution() -> None:
    stale = []
    for path in [*ROOT.glob("src/**/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        if re.search(r"['\" ]agentkit\[|pip install agentkit\s", text):
            stale.append(str(path.relative_to(ROOT)))
    assert stale == []


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.mark.slow(reason="builds the wheel and installs it into a fresh venv")
@pytest.mark.timeout(400)
def test_build_makes_a_wheel_and_an_sdist_that_pass_twine_check(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == [
        "agentkit_serverless-0.1.0-py3-none-any.whl",
        "agentkit_serverless-0.1.0.tar.gz",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with zipfile.ZipFile(dist / names[0]) as wheel:
        files = wheel.namelist()
    assert "agentkit/server/static/index.html" in files or any(
        f.startswith("agentkit/server/static/") for f in files
    )
    assert "agentkit/aws/templates/template.yaml" in files


@pytest.mark.slow(reason="builds the wheel and installs it into a fresh venv")
@pytest.mark.timeout(400)
def test_the_installed_wheel_runs_the_example(dist: Path, tmp_path: Path) -> None:
    # The wheel goes into a folder of its own, ahead of the checkout on the path; its
    # dependencies come from this environment (no index needed).
    target = tmp_path / "site"
    [wheel] = dist.glob("*.whl")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTKIT_MODEL"}
    env["PYTHONPATH"] = str(target)
    example = tmp_path / "weather"
    shutil.copytree(ROOT / "examples" / "weather", example)
    where = subprocess.run(
        [sys.executable, "-c", "import agentkit; print(agentkit.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert where.stdout.strip().startswith(str(target))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentkit",
            "run",
            "--dir",
            str(example),
            "What is the weather in Paris?",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["status"] == "idle"
