"""The paths of one session's files, built once per session (joining paths is not free:
a turn touches a session's files a dozen times)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from agentkit.store.ids import validate_session_id

_KEEP = 4096


class SessionFiles:
    """Where one session's files live (see the layout in `files.py`)."""

    __slots__ = ("events", "folder", "interrupt", "lease", "lock", "record", "workspace")

    def __init__(self, sessions: Path, locks: Path, session_id: str) -> None:
        self.folder = sessions / session_id
        self.record = self.folder / "session.json"
        self.events = self.folder / "events.ndjson"
        self.interrupt = self.folder / "interrupt"
        self.workspace = self.folder / "workspace"
        self.lock = locks / f"{session_id}.lock"
        # The lease lives in the lock file, which every session has anyway: one file fewer
        # to create per session. Windows' file lock truncates its lock file, so it keeps the
        # lease beside the session's other files.
        self.lease = self.folder / "lease.json" if sys.platform == "win32" else self.lock

    def exists(self) -> bool:
        """Whether the session exists: its `session.json` is the mark."""
        return self.record.exists()


class PathCache:
    """`SessionFiles` by session id, validated once; dropped whole when it grows large."""

    def __init__(self, sessions: Path, locks: Path) -> None:
        self._sessions = sessions
        self._locks = locks
        self._known: dict[str, SessionFiles] = {}
        self._guard = threading.Lock()

    def __call__(self, session_id: str) -> SessionFiles:
        found = self._known.get(session_id)
        if found is not None:
            return found
        made = SessionFiles(self._sessions, self._locks, validate_session_id(session_id))
        with self._guard:
            if len(self._known) >= _KEEP:
                self._known.clear()
            self._known[session_id] = made
        return made
