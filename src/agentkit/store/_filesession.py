"""A session's record on disk: `session.json` plus `updates.ndjson`, its log of changes.

`session.json` is written once, when the session is created. What changes later (the
continuation token's hash on every follow-up, `updatedAt`) is appended to `updates.ndjson`
as one JSON line holding every changed field, so the last whole line alone is the current
state of those fields. Replacing `session.json` through a new file and a rename, as each
token rotation once did, cost ten to a hundred times more than this append on ext4 (a rename
over a file with fresh data makes ext4 write that data out at once); appending to a file
that exists costs a write.

Each line is written as `\\n<json>\\n` in one `O_APPEND` write, so a line torn by a killed
writer stays on a line of its own and is skipped; readers take the last whole line that
parses. Appends never change bytes already written, so a reader that holds no lock sees the
state before a change or after it, never a mix. Readers read the log before `session.json`
(see `read_record`).
"""

from __future__ import annotations

import json
import os
from typing import Any

import msgspec

from agentkit.store._fs import StrPath, fsync_folder, held_file, read_json, write_all

UPDATES = "updates.ndjson"
_JSON = msgspec.json.Encoder()  # UTF-8 JSON as `json.dumps(ensure_ascii=False)`, ten times faster
_TAIL = 2048  # a line is about 120 bytes: the tail holds several whole ones


def read_record(folder: str) -> dict[str, Any] | None:
    """The session's stored JSON with its latest changes applied; None when it is gone."""
    # The log first: it only grows, so what it said stays true of `session.json`.
    changes = last_update(os.path.join(folder, UPDATES))
    raw = read_json(os.path.join(folder, "session.json"))
    if not isinstance(raw, dict):
        return None
    if changes:
        raw.update(changes)
    return raw


def append_update(
    folder: str, changes: dict[str, Any], *, fsync: bool, lock: str, inode: int | None
) -> None:
    """Record `changes` (every field changed since creation, not only the newest) durably:
    in the kernel on return, and on disk too with `fsync`. The caller holds the session's
    lock file `lock` exclusively; the log's descriptor is kept open with it (an `open` per
    token rotation cost more than the write). `inode`: the log's, as the caller last saw
    it under that lock (None when there was none)."""
    path = f"{folder}{os.sep}{UPDATES}"
    line = b"\n" + _JSON.encode(changes) + b"\n"
    fd, created = held_file(lock, path, inode, os.O_WRONLY | os.O_APPEND)
    write_all(fd, line)
    if fsync:
        os.fsync(fd)
        if created:
            fsync_folder(folder)  # the new file's name, so the change survives a power cut


def last_update(path: StrPath) -> dict[str, Any] | None:
    """The last whole, readable line of the log (None if there is none)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        size = os.fstat(fd).st_size
        found = _last_line(_pread(fd, max(0, size - _TAIL), size), whole=size <= _TAIL)
        if found is None and size > _TAIL:  # lines longer than the tail: read it all
            found = _last_line(_pread(fd, 0, size), whole=True)
    finally:
        os.close(fd)
    return found


def _pread(fd: int, start: int, end: int) -> bytes:
    chunks: list[bytes] = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)


def _last_line(data: bytes, *, whole: bool) -> dict[str, Any] | None:
    lines = data.split(b"\n")
    # The piece after the last newline is a line still being written (or torn): not yet
    # a change. Without the file's start, the first piece may be the end of a line.
    candidates = lines[:-1] if whole else lines[1:-1]
    for line in reversed(candidates):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue  # damaged (a power cut without `fsync`): an older change stands
        if isinstance(value, dict):
            return value
    return None


class RecordCache:
    """`read_record` results kept while neither file changed, checked by two `stat`s (a
    follow-up reads its session's record three or four times; each read opened and parsed
    both files). Compare-and-set changes use it too, under the session lock: no writer can
    change the files between their `stat`s and their use of the answer.

    Sound because the `stat`s come before the read: what is kept is at least as new as the
    key it is kept under, so a change is never hidden, at worst read twice. `session.json`
    is replaced by a rename (a new inode) and the log only grows (a new size).
    """

    def __init__(self, keep: int = 4096, *, enabled: bool = True) -> None:
        # Disabled, every read parses both files again (the file store without caches).
        self._keep = keep if enabled else 0
        self._known: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def read(self, folder: str) -> dict[str, Any] | None:
        """Like `read_record`; the dict returned is shared: do not change it."""
        key = self._key(folder)
        if key is None:
            self._known.pop(folder, None)
            return None
        hit = self._known.get(folder)
        if hit is not None and hit[0] == key:
            return hit[1]
        raw = read_record(folder)
        if raw is not None:
            self._keep_entry(folder, key, raw)
        return raw

    def updates_inode(self, folder: str) -> int | None:
        """The inode of the session's `updates.ndjson` as the last `read` or `wrote` saw it
        (None: there was none, or nothing is known)."""
        hit = self._known.get(folder)
        updates = hit[0][3] if hit is not None else None
        return updates[0] if updates is not None else None

    def wrote(self, folder: str, raw: dict[str, Any]) -> None:
        """Remember `raw` as the record just written (created, or changed by an appended
        update), so the next read needs no parse. The caller holds the session lock, so
        the files are exactly what `raw` says until it lets go: the key taken now is
        theirs (without the lock a later writer's change could be filed under it)."""
        key = self._key(folder)
        if key is not None:
            self._keep_entry(folder, key, raw)

    def _key(self, folder: str) -> tuple[Any, ...] | None:
        try:
            st = os.stat(f"{folder}{os.sep}session.json")
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            su = os.stat(f"{folder}{os.sep}{UPDATES}")
            updates: tuple[int, int, int] | None = (su.st_ino, su.st_size, su.st_mtime_ns)
        except (FileNotFoundError, NotADirectoryError):
            updates = None
        return (st.st_ino, st.st_size, st.st_mtime_ns, updates)

    def _keep_entry(self, folder: str, key: tuple[Any, ...], raw: dict[str, Any]) -> None:
        if not self._keep:
            return
        if len(self._known) >= self._keep:
            self._known.clear()
        self._known[folder] = (key, raw)
