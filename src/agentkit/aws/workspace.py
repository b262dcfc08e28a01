"""Session workspaces kept in S3, so they reach TurnFunction and outlive a turn.

On Lambda a function's `/tmp` belongs to one container: files the API function writes
there never reach TurnFunction, where agent-execution tools run, and nothing survives
the container. So the workspace bucket holds each session's workspace under its own
prefix, `sessions/<sessionId>/<path>`:

- the API function uploads the per-send `workspaceFiles` of a message (`upload_files`);
- TurnFunction, before a turn, replaces its local copy with the prefix's objects
  (`hydrate`) and, after the turn, uploads the files the turn added or changed and deletes
  the objects of files it removed (`write_back`), then drops the local copy so the next
  session served by the same container cannot read it.

Only regular files are copied: symbolic links, sockets and the like are never followed or
uploaded (a tool could point a link at the function's code or `/proc`). The whole
workspace is capped (`max_bytes`, 50 MiB by default, `AGENTKIT_WORKSPACE_MAX_BYTES`):
changed files that would take it over the cap are not written back, and are logged and
reported. Two turns of one session never run at once (the turn lease), so a write-back
does not race another turn's; a follow-up's per-send file uploaded while an interrupted
turn writes back is overwritten only if that turn changed the same path.

boto3 is blocking: call these methods from a worker thread in async code.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.engine.tools.workspace import safe_relative
from agentkit.errors import BadRequest

log = logging.getLogger("agentkit.aws.workspace")

PREFIX = "sessions/"
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
# What `engine.workspace` writes first and renames into place; never worth keeping.
_TEMP_PREFIX = ".agentkit-"
_TEMP_SUFFIX = ".tmp"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The workspace's regular files as hydrated: path -> (size, sha256)."""

    files: Mapping[str, tuple[int, str]] = field(default_factory=dict)


@dataclass(slots=True)
class SyncReport:
    """What one `write_back` did."""

    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # over the size cap


class S3Workspaces:
    """Session workspaces in one bucket, one prefix per session."""

    def __init__(self, client: Any, bucket: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not bucket:
            raise ValueError("S3Workspaces needs a bucket name")
        self._client = client
        self.bucket = bucket
        self.max_bytes = max_bytes

    def prefix(self, session_id: str) -> str:
        """The key prefix of one session's workspace."""
        return f"{PREFIX}{session_id}/"

    def key(self, session_id: str, rel: str) -> str:
        return self.prefix(session_id) + str(safe_relative(rel))

    # -- the API function --------------------------------------------------------------

    def upload_files(self, session_id: str, files: Mapping[str, str]) -> None:
        """Upload a message's per-send files (already checked by the engine)."""
        for rel, text in files.items():
            self._put(session_id, rel, text.encode("utf-8"))

    # -- TurnFunction ------------------------------------------------------------------

    def hydrate(self, session_id: str, workspace: Path) -> Snapshot:
        """Make `workspace` a copy of the session's prefix; returns what it then holds."""
        shutil.rmtree(workspace, ignore_errors=True)
        workspace.mkdir(parents=True, exist_ok=True)
        files: dict[str, tuple[int, str]] = {}
        total = 0
        for key, size in self._list(session_id):
            rel = key[len(self.prefix(session_id)) :]
            try:
                rel = str(safe_relative(rel))
            except BadRequest:
                log.warning("workspace object with an unusable name ignored: %r", key)
                continue
            if total + size > self.max_bytes:
                log.warning("workspace over %d bytes: %r not hydrated", self.max_bytes, rel)
                continue
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            target = workspace / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(body)
            except OSError as exc:  # a file where a folder is needed: keep the rest
                log.warning("workspace object %r not hydrated: %s", key, exc)
                continue
            total += len(body)
            files[rel] = (len(body), hashlib.sha256(body).hexdigest())
        return Snapshot(files)

    def write_back(self, session_id: str, workspace: Path, before: Snapshot) -> SyncReport:
        """Upload what changed since `before`, delete what was removed, within the cap."""
        report = SyncReport()
        now = dict(_regular_files(workspace))
        changed = sorted(rel for rel, entry in now.items() if before.files.get(rel) != entry)
        kept = sum(size for rel, (size, _) in now.items() if rel not in changed)
        for rel in changed:
            size = now[rel][0]
            if kept + size > self.max_bytes:
                report.skipped.append(rel)
                continue
            try:
                body = _read_regular(workspace / rel)
            except OSError:
                continue  # removed or replaced since the walk: nothing to save
            self._put(session_id, rel, body)
            kept += size
            report.uploaded.append(rel)
        for rel in sorted(set(before.files) - set(now)):
            self._client.delete_object(Bucket=self.bucket, Key=self.key(session_id, rel))
            report.deleted.append(rel)
        if report.skipped:
            log.warning(
                "workspace of %s over %d bytes: not saved: %s",
                session_id,
                self.max_bytes,
                ", ".join(report.skipped[:20]),
            )
        return report

    def discard_local(self, workspace: Path) -> None:
        """Drop the local copy (the next session in this container must not see it)."""
        shutil.rmtree(workspace, ignore_errors=True)

    # -- S3 ----------------------------------------------------------------------------

    def _put(self, session_id: str, rel: str, body: bytes) -> None:
        self._client.put_object(Bucket=self.bucket, Key=self.key(session_id, rel), Body=body)

    def _list(self, session_id: str) -> Iterator[tuple[str, int]]:
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix(session_id)):
            for item in page.get("Contents", []):
                yield item["Key"], int(item["Size"])


def _regular_files(root: Path) -> Iterator[tuple[str, tuple[int, str]]]:
    """Every regular file under `root` (links never followed): path -> (size, sha256)."""
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            if name.startswith(_TEMP_PREFIX) and name.endswith(_TEMP_SUFFIX):
                continue
            path = Path(folder) / name
            try:
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                digest = _sha256(path)
            except OSError:
                continue
            yield path.relative_to(root).as_posix(), (info.st_size, digest)


def _open_regular(path: Path) -> int:
    """A read descriptor for `path` only if it is a regular file reached without a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"not a regular file: {path}")
    return fd


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with os.fdopen(_open_regular(path), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_regular(path: Path) -> bytes:
    with os.fdopen(_open_regular(path), "rb") as f:
        return f.read()
