"""Per-session workspaces: the folder a session's agent tools run in.

Seeded once from `agent/sandbox/workspace/**`, with the instructions as `AGENTS.md` and
each skill under `.agentkit/skills/<name>/SKILL.md` (plus its files). Per-send
`workspaceFiles` are written before the turn; their paths must be relative and stay inside.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from agentkit.errors import BadRequest
from agentkit.project.manifest import Manifest

SEED_MARKER = ".agentkit/seeded"
MAX_FILES = 200


def safe_relative(path: str) -> PurePosixPath:
    """A workspace-relative path, or `BadRequest` if it is absolute or climbs out."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise BadRequest(f"invalid workspace file path: {path!r}", code="invalid_path")
    rel = PurePosixPath(path)
    if rel.is_absolute() or any(part in ("..", "") for part in rel.parts) or rel.parts[0] == ".":
        raise BadRequest(
            f"workspace file path must be relative and inside the workspace: {path!r}",
            code="invalid_path",
        )
    return rel


def check_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """Validate per-send files before anything is recorded."""
    if not files:
        return {}
    if len(files) > MAX_FILES:
        raise BadRequest(f"too many workspace files (at most {MAX_FILES})")
    out: dict[str, str] = {}
    for path, text in files.items():
        if not isinstance(text, str):
            raise BadRequest(f"workspace file {path!r} must be text")
        out[str(safe_relative(path))] = text
    return out


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def seed(workspace: Path, manifest: Manifest, sandbox_dir: Path | None) -> None:
    """Create and seed the workspace once (a marker file records that it was done)."""
    marker = workspace / SEED_MARKER
    if marker.exists():
        return
    workspace.mkdir(parents=True, exist_ok=True)
    if sandbox_dir is not None and sandbox_dir.is_dir():
        shutil.copytree(sandbox_dir, workspace, dirs_exist_ok=True)
    if manifest.instructions:
        _write(workspace, "AGENTS.md", manifest.instructions)
    for skill in manifest.skills:
        base = f".agentkit/skills/{skill.name}"
        _write(workspace, f"{base}/SKILL.md", skill.markdown)
        for rel, text in skill.files.items():
            _write(workspace, f"{base}/{safe_relative(rel)}", text)
    _write(workspace, SEED_MARKER, "")


def write_files(workspace: Path, files: Mapping[str, str]) -> None:
    """Write already-checked per-send files into the workspace."""
    for rel, text in files.items():
        _write(workspace, rel, text)
