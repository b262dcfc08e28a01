"""`FileBlobs`: the file store's blobs, one file per content hash under `<root>/blobs/`.

A blob lives at `blobs/sha256/ab/cdef…` (the hash's first two hex digits name a folder, so
no folder holds more than a few thousand files). It is written to a temporary file beside
that name and renamed into place, so a blob is whole or absent, never half there; a writer
killed mid-way leaves only a temporary file, which no event names. A blob already there is
never written again (content-addressed: it could only be written with the same bytes).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agentkit.errors import StoreError
from agentkit.store._fs import write_atomic
from agentkit.store.blobs import HASH_NAME, BlobRef, BlockingBlobs, StoredBlob

BLOBS_FOLDER = "blobs"


class FileBlobs(BlockingBlobs):
    """Content-addressed blobs in a folder (`<state root>/blobs`)."""

    def __init__(self, folder: Path, *, fsync: bool = False) -> None:
        self.folder = Path(folder)
        self._fsync = fsync

    def path(self, ref: BlobRef) -> Path:
        return self.folder / ref.key()

    def put_sync(self, data: bytes) -> BlobRef:
        ref = BlobRef.of(data)
        path = self.path(ref)
        try:
            if os.stat(path).st_size == ref.size:
                # Stored already (by this session or any other): its time says it is in
                # use again, so a sweep running now keeps it (`blob_sweep`).
                os.utime(path)
                return ref
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, fsync=self._fsync)
        return ref

    def get_sync(self, ref: BlobRef) -> bytes:
        try:
            data = self.path(ref).read_bytes()
        except FileNotFoundError:
            raise StoreError(f"blob {ref.sha256[:16]}… is missing from {self.folder}") from None
        return ref.check(data)

    def count(self) -> int:
        if not self.folder.is_dir():
            return 0
        return sum(
            1
            for fan in self.folder.glob("sha256/*")
            for entry in fan.iterdir()
            if not entry.name.startswith(".")
        )

    def list_stored(self) -> list[StoredBlob]:
        found: list[StoredBlob] = []
        if not self.folder.is_dir():
            return found
        for fan in self.folder.glob(f"{HASH_NAME}/*"):
            with os.scandir(fan) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or not entry.is_file():
                        continue  # a temporary file of a write under way
                    try:
                        st = entry.stat()
                    except FileNotFoundError:
                        continue
                    found.append(StoredBlob(fan.name + entry.name, st.st_size, st.st_mtime))
        return found

    def _path_of(self, sha256: str) -> Path:
        return self.folder / HASH_NAME / sha256[:2] / sha256[2:]

    def written_at(self, sha256: str) -> float | None:
        try:
            return os.stat(self._path_of(sha256)).st_mtime
        except FileNotFoundError:
            return None

    def remove(self, sha256: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path_of(sha256))

    def remove_stale_writes(self, before: float) -> int:
        """Remove the temporary files of blob writes that never finished (their writer was
        killed) last touched before `before` (epoch seconds); how many."""
        removed = 0
        for tmp in self.folder.glob(f"{HASH_NAME}/*/.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                if tmp.stat().st_mtime < before:
                    tmp.unlink()
                    removed += 1
        return removed


def blobs_beside(events_file: Path) -> FileBlobs | None:
    """The blobs of the state folder a session's `events.ndjson` lies in, if it does
    (`<root>/sessions/<id>/events.ndjson`); None for any other file."""
    events_file = Path(events_file).absolute()
    root = events_file.parent.parent.parent
    if events_file.parent.parent.name != "sessions" or not (root / BLOBS_FOLDER).is_dir():
        return None
    return FileBlobs(root / BLOBS_FOLDER)
