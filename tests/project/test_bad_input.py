"""Bad input never crashes discovery: it becomes diagnostics (or is skipped safely)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentkit.project.bundle import AgentBundle
from tests.fixtures.project_tree import ProjectTree


def test_empty_agent_folder_reports_missing_instructions(project_tree: ProjectTree) -> None:
    root = project_tree(minimal=False)
    (root / "agent").mkdir()
    m = AgentBundle.discover(root).manifest
    assert [d.code for d in m.diagnostics] == ["instructions.missing"]
    assert m.instructions == ""


def test_symlink_out_of_the_project_is_skipped(project_tree: ProjectTree, tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("---\ndescription: leaked\n---\nsecret\n")
    root = project_tree()
    (root / "agent" / "skills").mkdir()
    (root / "agent" / "skills" / "leak.md").symlink_to(secret)
    workspace = root / "agent" / "sandbox" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "passwd").symlink_to(secret)
    (workspace / "outdir").symlink_to(secret.parent, target_is_directory=True)
    m = AgentBundle.discover(root).manifest
    assert m.skills == [] and m.workspace_files == []
    assert sorted(d.path for d in m.diagnostics if d.code == "path.outside_project") == [
        "agent/sandbox/workspace/outdir",
        "agent/sandbox/workspace/passwd",
        "agent/skills/leak.md",
    ]
    assert not m.has_errors


def test_symlink_inside_the_project_is_followed(project_tree: ProjectTree) -> None:
    root = project_tree({"shared/checklist.md": "---\ndescription: Shared.\n---\nSteps\n"})
    (root / "agent" / "skills").mkdir()
    (root / "agent" / "skills" / "checklist.md").symlink_to(root / "shared" / "checklist.md")
    (skill,) = AgentBundle.discover(root).manifest.skills
    assert skill.description == "Shared."


def test_broken_symlink_is_a_warning(project_tree: ProjectTree) -> None:
    root = project_tree()
    (root / "agent" / "tools").mkdir()
    (root / "agent" / "tools" / "gone.py").symlink_to(root / "agent" / "nowhere.py")
    m = AgentBundle.discover(root).manifest
    assert [(d.code, d.severity) for d in m.diagnostics] == [("file.unreadable", "warning")]


def test_huge_workspace_file_is_listed_not_read(project_tree: ProjectTree) -> None:
    root = project_tree()
    big = root / "agent" / "sandbox" / "workspace" / "dump.bin"
    big.parent.mkdir(parents=True)
    with big.open("wb") as f:  # sparse: no 50 MB actually written
        f.truncate(50 * 1024 * 1024)
    started = time.perf_counter()
    m = AgentBundle.discover(root).manifest
    assert time.perf_counter() - started < 5
    assert m.workspace_files == ["dump.bin"]
    assert m.diagnostics == []


def test_unreadable_file_is_a_diagnostic(project_tree: ProjectTree) -> None:
    root = project_tree({"agent/skills/locked.md": "x"})
    path = root / "agent" / "skills" / "locked.md"
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root: file permissions do not stop reads (see the next test)")
        m = AgentBundle.discover(root).manifest
        assert [d.code for d in m.diagnostics] == ["file.unreadable"]
    finally:
        path.chmod(0o644)


def test_a_file_that_cannot_be_read_even_by_root_is_a_diagnostic(
    project_tree: ProjectTree,
) -> None:
    # A directory where the instructions file belongs: reading it fails for every user.
    root = project_tree()
    instructions = root / "agent" / "instructions.md"
    instructions.unlink()
    instructions.mkdir()
    m = AgentBundle.discover(root).manifest
    found = [(d.code, d.path) for d in m.diagnostics]
    assert found == [
        ("file.unreadable", "agent/instructions.md"),
        ("instructions.missing", "agent/instructions.md"),
    ]
    assert m.has_errors


def test_invalid_pyproject_falls_back_to_the_folder_name(project_tree: ProjectTree) -> None:
    root = project_tree({"pyproject.toml": "[project\nname="}, name="fallback")
    m = AgentBundle.discover(root).manifest
    assert m.agent.name == "fallback"
    assert [(d.code, d.severity) for d in m.diagnostics] == [("file.unreadable", "warning")]


def test_binary_garbage_in_every_discovery_folder(project_tree: ProjectTree) -> None:
    junk = bytes(range(256)) * 4
    root = project_tree(
        {
            f"agent/{folder}/junk.{ext}": junk
            for folder, ext in [
                ("tools", "py"),
                ("skills", "md"),
                ("schedules", "md"),
                ("hooks", "py"),
                ("channels", "py"),
                ("mcp-connections", "py"),
            ]
        }
        | {"agent/instructions/junk.md": junk}
    )
    m = AgentBundle.discover(root).manifest
    assert m.has_errors
    assert len(m.diagnostics) >= 7


def test_oversized_skill_file_is_an_error_not_a_hang(project_tree: ProjectTree) -> None:
    root = project_tree()
    big = root / "agent" / "skills" / "huge.md"
    big.parent.mkdir(parents=True)
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    m = AgentBundle.discover(root).manifest
    assert [(d.code, d.path) for d in m.diagnostics] == [("file.too_large", "agent/skills/huge.md")]


def test_binary_file_in_a_skill_folder_is_skipped_with_a_warning(
    project_tree: ProjectTree,
) -> None:
    root = project_tree(
        {
            "agent/skills/s/SKILL.md": "---\ndescription: d\n---\nBody\n",
            "agent/skills/s/logo.png": b"\x89PNG\r\n\x1a\n\xff\xfe",
        }
    )
    m = AgentBundle.discover(root).manifest
    assert m.skills[0].files == {}
    assert [(d.code, d.severity) for d in m.diagnostics] == [("file.not_utf8", "warning")]
