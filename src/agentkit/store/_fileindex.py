"""The file store's indexes: sessions by principal (newest first) and by continuation key.

Listing reads one index file of markers `<created ms>~<session id>` (zero padded, so they
sort by time), one per line, and opens `session.json` only for the sessions on the page: the
cost is one read of the principal's index, not a scan of every session. `all.idx` lists
every session, `by-principal/<sha256>.idx` one principal's. A session is added by appending
its marker and removed by appending `-<marker>`: an append to a file that exists is many
times cheaper than creating a file per marker, and `O_APPEND` writes of one short line from
several processes never interleave. Each line is written as `\n<line>\n`, so a line torn by
a killed writer stays on its own (and is skipped as malformed), never glued to the next. The
key index maps `sha256(channel, key)` to a small JSON file naming the session.

Markers are written after `session.json` is whole and removed after the session folder is
gone, so a listed session always has its record; a crash leaves at worst a marker pointing
at nothing, which readers skip, or an unlisted folder of a session never handed out.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

from agentkit.sessions import SessionRecord
from agentkit.store._fs import read_json, unlink, write_json_atomic
from agentkit.store.ids import created_ms, encode_cursor

_MARKER_RE = re.compile(r"^\d{16}~ses_[A-Za-z0-9_-]{16,64}$")


def _append_line(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"\n{line}\n".encode("ascii"))  # short: one write, never split
    finally:
        os.close(fd)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class SessionIndex:
    """Index files under `<root>/index/`."""

    def __init__(self, root: Path, *, fsync: bool = False) -> None:
        self._fsync = fsync  # as `session.json`: the pair must agree after a power cut
        self._all = root / "all.idx"
        self._principals = root / "by-principal"
        self._keys = root / "keys"

    def add(self, record: SessionRecord) -> None:
        name = self.marker(record)
        for path in self._files(record):
            try:
                _append_line(path, name)
            except FileNotFoundError:  # the first session: make the folders
                path.parent.mkdir(parents=True, exist_ok=True)
                _append_line(path, name)
        if record.continuation_key is not None:
            self._keys.mkdir(parents=True, exist_ok=True)
            write_json_atomic(
                self._key_path(record.channel_id, record.continuation_key),
                {"sessionId": record.id},
                fsync=self._fsync,
            )

    def remove(self, record: SessionRecord) -> None:
        name = self.marker(record)
        for path in self._files(record):
            with contextlib.suppress(FileNotFoundError):  # never indexed: nothing to remove
                _append_line(path, "-" + name)
        if record.continuation_key is not None:
            path = self._key_path(record.channel_id, record.continuation_key)
            pointed = read_json(path)
            if isinstance(pointed, dict) and pointed.get("sessionId") == record.id:
                unlink(path)

    def lookup(self, channel_id: str, continuation_key: str) -> str | None:
        """The session id the key was last given to, if any (the caller verifies it)."""
        pointed = read_json(self._key_path(channel_id, continuation_key))
        if isinstance(pointed, dict) and isinstance(pointed.get("sessionId"), str):
            return str(pointed["sessionId"])
        return None

    def newest_first(self, principal: str | None, after: str | None) -> list[str]:
        """Marker names, newest first, strictly after the cursor `after`."""
        path = self._all if principal is None else self._principals / f"{_digest(principal)}.idx"
        try:
            lines = path.read_bytes().decode("ascii", "replace").split("\n")
        except FileNotFoundError:
            return []
        removed = {line[1:] for line in lines if line.startswith("-")}
        names = sorted(
            {n for n in lines if _MARKER_RE.fullmatch(n) and n not in removed}, reverse=True
        )
        if after is not None:
            names = [n for n in names if n < after]
        return names

    @staticmethod
    def marker(record: SessionRecord) -> str:
        return encode_cursor(created_ms(record.created_at), record.id)

    @staticmethod
    def session_of(marker: str) -> str:
        return marker.split("~", 1)[1]

    def _files(self, record: SessionRecord) -> list[Path]:
        files = [self._all]
        if record.principal is not None:
            files.append(self._principals / f"{_digest(record.principal)}.idx")
        return files

    def _key_path(self, channel_id: str, continuation_key: str) -> Path:
        return self._keys / f"{_digest(channel_id, continuation_key)}.json"
