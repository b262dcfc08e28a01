"""Safe file access for discovery: stays inside the project and never crashes on bad bytes."""

from __future__ import annotations

import os
from pathlib import Path

from agentkit.project.diagnostics import Collector

SKIPPED_NAMES = frozenset({"__pycache__", ".DS_Store"})
# Markdown, skill files and pyproject.toml are read whole into the manifest.
MAX_TEXT_BYTES = 1024 * 1024


class ProjectFS:
    """Lists and reads files under one project root, reporting problems as diagnostics."""

    def __init__(self, root: Path, diag: Collector) -> None:
        self.root = root
        self.diag = diag
        self._real_root = root.resolve()

    def rel(self, path: Path) -> str:
        """The project-relative POSIX path (what diagnostics and the manifest show)."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def inside(self, path: Path) -> bool:
        """True when `path`, symlinks resolved, is still inside the project."""
        try:
            path.resolve().relative_to(self._real_root)
        except (ValueError, OSError, RuntimeError):
            return False
        return True

    def _usable(self, path: Path) -> bool:
        if path.is_symlink():
            if not self.inside(path):
                self.diag.add(
                    "path.outside_project",
                    self.rel(path),
                    "this symlink points outside the project, so it is skipped; "
                    "copy the file into the project instead",
                )
                return False
            if not path.exists():
                self.diag.add("file.unreadable", self.rel(path), "broken symlink", "warning")
                return False
        return True

    def entries(self, folder: Path) -> list[Path]:
        """Sorted children of `folder` that discovery may look at."""
        try:
            children = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError:
            return []
        return [
            p
            for p in children
            if p.name not in SKIPPED_NAMES and not p.name.startswith(".") and self._usable(p)
        ]

    def read_text(self, path: Path, *, binary_ok: bool = False) -> str | None:
        """The file's UTF-8 text, or None (with a diagnostic) when it cannot be had.

        With `binary_ok`, a non-UTF-8 file is a warning (skipped) rather than an error.
        """
        try:
            size = path.stat().st_size
            if size > MAX_TEXT_BYTES:
                self.diag.add(
                    "file.too_large",
                    self.rel(path),
                    f"{size} bytes is more than the {MAX_TEXT_BYTES} a text file here may hold; "
                    "large data belongs in agent/sandbox/workspace/",
                )
                return None
            data = path.read_bytes()
        except OSError as exc:
            self.diag.add("file.unreadable", self.rel(path), f"cannot read the file: {exc}")
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.diag.add(
                "file.not_utf8",
                self.rel(path),
                f"the file is not valid UTF-8 (byte {exc.start}); save it as UTF-8"
                + (" (skipped)" if binary_ok else ""),
                "warning" if binary_ok else None,
            )
            return None

    def list_files(self, folder: Path) -> list[str]:
        """Every regular file under `folder`, relative to it, sorted. Contents are not read.

        Symlinked folders are not followed (they could loop or leave the project);
        symlinked files are listed only when they resolve inside the project.
        """
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            here = Path(dirpath)
            keep = []
            for d in sorted(dirnames):
                if d in SKIPPED_NAMES:
                    continue
                if (here / d).is_symlink():
                    if not self.inside(here / d):
                        self._usable(here / d)
                    continue
                keep.append(d)
            dirnames[:] = keep
            for f in sorted(filenames):
                p = here / f
                if f in SKIPPED_NAMES or not self._usable(p):
                    continue
                out.append(p.relative_to(folder).as_posix())
        return sorted(out)
