"""`agentkit build`: compile a project into a self-contained, deterministic folder.

    <out>/manifest.json     the discovered surface (what a Lambda function loads)
    <out>/agent/...         the agent's code and files, byte for byte
    <out>/evals/...         the evals, when the project has them

Two builds of the same input are byte-identical: the manifest has sorted keys, relative
paths and no timestamps, files are copied in sorted order and every mtime is pinned.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentkit.errors import ProjectError
from agentkit.project.bundle import MANIFEST_FILE, AgentBundle
from agentkit.project.diagnostics import Collector
from agentkit.project.files import ProjectFS
from agentkit.project.manifest import Manifest

# 1980-01-01, the earliest time a zip archive (a Lambda package) can record.
DEFAULT_EPOCH = 315532800
COPIED_FOLDERS = ("agent", "evals")


@dataclass(frozen=True, slots=True)
class BuildResult:
    out: Path
    manifest: Manifest
    files: list[str]  # relative to `out`, manifest.json included


def _epoch() -> int:
    raw = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(raw) if raw.isdigit() else DEFAULT_EPOCH


def _prepare_out(root: Path, out: Path) -> None:
    for folder in COPIED_FOLDERS:
        src = root / folder
        if out == src or src in out.parents:
            raise ProjectError(f"the build folder cannot be inside {folder}/ of the project")
    if out == root or out in root.parents:
        raise ProjectError("the build folder cannot be the project folder or one of its parents")
    if out.exists():
        if not out.is_dir():
            raise ProjectError(f"{out} exists and is not a folder")
        if any(out.iterdir()) and not (out / MANIFEST_FILE).is_file():
            raise ProjectError(
                f"{out} is not empty and is not a previous build; refusing to overwrite it"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True)


def build_project(project_dir: Path, out: Path) -> BuildResult:
    """Discover, refuse on error diagnostics, then write the build folder."""
    root = Path(project_dir).resolve()
    bundle = AgentBundle.discover(root)
    bundle.require_valid()
    out = Path(out).resolve()
    _prepare_out(root, out)
    fs = ProjectFS(root, Collector())
    written: list[str] = []
    for folder in COPIED_FOLDERS:
        src = root / folder
        if not src.is_dir():
            continue
        for rel in fs.list_files(src):
            if rel.endswith((".pyc", ".pyo")):
                continue
            target = out / folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / rel, target)
            written.append(f"{folder}/{rel}")
    (out / MANIFEST_FILE).write_text(bundle.manifest.to_json(), encoding="utf-8")
    written.append(MANIFEST_FILE)
    _pin_times(out, _epoch())
    return BuildResult(out=out, manifest=bundle.manifest, files=sorted(written))


def _pin_times(out: Path, epoch: int) -> None:
    for dirpath, _dirs, files in os.walk(out):
        for name in files:
            os.utime(Path(dirpath) / name, (epoch, epoch))
        os.utime(dirpath, (epoch, epoch))
