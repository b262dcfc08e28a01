"""`build_project`: a deterministic, self-contained folder a Lambda function can load."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentkit.errors import ProjectError
from agentkit.project.build import build_project
from agentkit.project.bundle import AgentBundle
from agentkit.project.manifest import Manifest

PR_REVIEW = Path(__file__).resolve().parents[2] / "examples" / "pr-review"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "pr-review"
    shutil.copytree(PR_REVIEW, dest, ignore=shutil.ignore_patterns("__pycache__", ".agentkit"))
    return dest


@pytest.mark.smoke
def test_two_builds_are_byte_identical(project: Path, tmp_path: Path) -> None:
    first = _snapshot(build_project(project, tmp_path / "b1").out)
    second = _snapshot(build_project(project, tmp_path / "b2").out)
    assert first == second
    assert "manifest.json" in first and "agent/tools/approve_pr.py" in first


def test_build_pins_file_times(project: Path, tmp_path: Path) -> None:
    out = build_project(project, tmp_path / "b").out
    assert {int(p.stat().st_mtime) for p in out.rglob("*")} == {315532800}


@pytest.mark.smoke
def test_manifest_has_no_absolute_paths(project: Path, tmp_path: Path) -> None:
    out = build_project(project, tmp_path / "b").out
    text = (out / "manifest.json").read_text()
    assert str(tmp_path) not in text
    Manifest.model_validate_json(text)


def test_built_folder_runs_without_the_project(project: Path, tmp_path: Path) -> None:
    out = build_project(project, tmp_path / "b").out
    shutil.rmtree(project)
    bundle = AgentBundle.load_built(out)
    tool = bundle.tool("inspect_pr")
    assert tool is not None
    assert bundle.manifest.tool("approve_pr") is not None
    assert bundle.schedule("failing-checks") is not None
    assert bundle.channel("drive") is not None


def test_rebuilding_replaces_a_previous_build(project: Path, tmp_path: Path) -> None:
    out = build_project(project, tmp_path / "b").out
    (out / "agent" / "stale.py").write_text("old")
    build_project(project, out)
    assert not (out / "agent" / "stale.py").exists()


def test_refuses_to_overwrite_a_folder_that_is_not_a_build(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    with pytest.raises(ProjectError, match="refusing"):
        build_project(project, out)
    assert (out / "keep.txt").read_text() == "precious"


def test_refuses_to_build_into_agent_folder(project: Path) -> None:
    with pytest.raises(ProjectError):
        build_project(project, project / "agent" / "out")


def test_refuses_on_error_diagnostics(project: Path, tmp_path: Path) -> None:
    (project / "agent" / "tools" / "broken.py").write_text("def broken(:\n")
    with pytest.raises(ProjectError) as info:
        build_project(project, tmp_path / "b")
    assert [d.code for d in info.value.diagnostics] == ["import.failed"]
    assert not (tmp_path / "b").exists()
