"""The manifest digest `session.started` records: the same for a byte-identical bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentkit.project.bundle import AgentBundle
from agentkit.project.digest import manifest_digest
from tests.engine.conftest import write_project


def test_a_byte_identical_bundle_has_the_same_digest(tmp_path: Path) -> None:
    first = write_project(tmp_path / "a")
    second = tmp_path / "elsewhere" / "a"  # the folder name is the agent's name
    shutil.copytree(first, second)
    digest = manifest_digest(AgentBundle.discover(first).manifest)
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert manifest_digest(AgentBundle.discover(first).manifest) == digest
    assert manifest_digest(AgentBundle.discover(second).manifest) == digest


def test_a_changed_tool_changes_the_digest(tmp_path: Path) -> None:
    root = write_project(tmp_path / "a")
    before = manifest_digest(AgentBundle.discover(root).manifest)
    tool = root / "agent" / "tools" / "add.py"
    tool.write_text(tool.read_text().replace("b: int", "b: int\n    c: int = 0"))
    assert manifest_digest(AgentBundle.discover(root).manifest) != before
