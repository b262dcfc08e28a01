"""The paths of one session's files, built once per session (a turn touches a session's
files a dozen times). They are plain strings: `pathlib` parses a path again each time one
is joined or handed to the OS, which cost more than the system calls themselves."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from agentkit.store.ids import validate_session_id

_KEEP = 4096


class SessionFiles:
    """Where one session's files live (see the layout in `files.py`)."""

    __slots__ = (
        "events",
        "folder",
        "interrupt",
        "lease",
        "lock",
        "record",
        "updates",
        "workspace",
    )

    def __init__(self, sessions: str, locks: str, session_id: str) -> None:
        self.folder = f"{sessions}{os.sep}{session_id}"
        self.record = f"{self.folder}{os.sep}session.json"
        self.updates = f"{self.folder}{os.sep}updates.ndjson"
        self.events = f"{self.folder}{os.sep}events.ndjson"
        self.interrupt = f"{self.folder}{os.sep}interrupt"
        self.workspace = f"{self.folder}{os.sep}workspace"
        self.lock = f"{locks}{os.sep}{session_id}.lock"
        # The lease lives in the lock file, which every session has anyway: one file fewer
        # to create per session. Windows' file lock truncates its lock file, so it keeps the
        # lease beside the session's other files.
        self.lease = f"{self.folder}{os.sep}lease.json" if sys.platform == "win32" else self.lock

    def exists(self) -> bool:
        """Whether the session exists: its `session.json` is the mark."""
        return os.path.exists(self.record)

    def interrupted(self) -> bool:
        """Whether its `interrupt` flag file is there (what it names is not read)."""
        return os.path.exists(self.interrupt)


class PathCache:
    """`SessionFiles` by session id, validated once; dropped whole when it grows large."""

    def __init__(self, sessions: Path, locks: Path) -> None:
        self._sessions = str(sessions)
        self._locks = str(locks)
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
