"""The file store's indexes: sessions by principal (newest first) and by continuation key.

Listing reads one folder of empty marker files named `<created ms>~<session id>` (zero
padded, so names sort by time) and opens `session.json` only for the sessions on the page:
the cost is one `listdir` of the principal's markers, not a scan of every session. The key
index maps `sha256(channel, key)` to a small JSON file naming the session.

Markers are written before `session.json` and removed after the session folder is gone, so
a crash leaves at worst a marker pointing at nothing, which readers skip.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from agentkit.sessions import SessionRecord
from agentkit.store._fs import read_json, unlink, write_json_atomic
from agentkit.store.ids import created_ms, encode_cursor

_MARKER_RE = re.compile(r"^\d{16}~ses_[A-Za-z0-9_-]{16,64}$")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class SessionIndex:
    """Marker folders under `<root>/index/`."""

    def __init__(self, root: Path) -> None:
        self._all = root / "all"
        self._principals = root / "by-principal"
        self._keys = root / "keys"

    def add(self, record: SessionRecord) -> None:
        name = self.marker(record)
        for folder in self._folders(record):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).touch()
        if record.continuation_key is not None:
            self._keys.mkdir(parents=True, exist_ok=True)
            write_json_atomic(
                self._key_path(record.channel_id, record.continuation_key),
                {"sessionId": record.id},
            )

    def remove(self, record: SessionRecord) -> None:
        name = self.marker(record)
        for folder in self._folders(record):
            unlink(folder / name)
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
        folder = self._all if principal is None else self._principals / _digest(principal)
        try:
            names = [n for n in os.listdir(folder) if _MARKER_RE.fullmatch(n)]
        except FileNotFoundError:
            return []
        names.sort(reverse=True)
        if after is not None:
            names = [n for n in names if n < after]
        return names

    @staticmethod
    def marker(record: SessionRecord) -> str:
        return encode_cursor(created_ms(record.created_at), record.id)

    @staticmethod
    def session_of(marker: str) -> str:
        return marker.split("~", 1)[1]

    def _folders(self, record: SessionRecord) -> list[Path]:
        folders = [self._all]
        if record.principal is not None:
            folders.append(self._principals / _digest(record.principal))
        return folders

    def _key_path(self, channel_id: str, continuation_key: str) -> Path:
        return self._keys / f"{_digest(channel_id, continuation_key)}.json"
