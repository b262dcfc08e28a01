"""The paths of one session's files, built once per session (a turn touches a session's
files a dozen times). They are plain strings: `pathlib` parses a path again each time one
is joined or handed to the OS, which cost more than the system calls themselves."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from agentkit.store.ids import validate_session_id

_KEEP = 4096
T = TypeVar("T")


class SessionLocking:
    """A mixin of `FileStore` whose methods run work under a session's lock: the store
    implements `_locked` (`files.py`); the mixins only declare it, once, here."""

    if TYPE_CHECKING:

        async def _locked(
            self,
            session_id: str,
            fn: Callable[[], T],
            *,
            inline: bool = True,
            offloaded: Callable[[], T] | None = None,
        ) -> T: ...


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
        if sys.platform == "win32":
            # A folder holding a locked file cannot be renamed there (a deletion moves the
            # session's folder), and its file lock truncates the lock file: the lock stays
            # in `locks/`, the lease beside the session's other files.
            self.lock = f"{locks}{os.sep}{session_id}.lock"
            self.lease = f"{self.folder}{os.sep}lease.json"
        else:
            # In the session's own folder: a file created in a folder just made cost a
            # fraction of one added to `locks/`, which holds a file per session ever made.
            # The lease lives in it too: one file fewer to create per session.
            self.lock = f"{self.folder}{os.sep}lock"
            self.lease = self.lock

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
