"""One session's `events.ndjson`: a parsed, incrementally refreshed view and the append path.

The file is the truth; the view caches the events parsed so far and the byte offset they
end at. A read first `stat`s the file: if nothing was appended since (by any process), it
is a list slice. Otherwise the new bytes are read under the session's lock held shared, so
no writer is half way through them, and only complete lines count.

Writers hold the lock exclusively. A writer killed mid-write leaves a torn last line (no
trailing newline): the next reader or appender to hold the lock finds it and cuts it off. A batch
of several events is written in one `write`, announced first by `events.ndjson.pending`
holding the batch's start offset; if its writer dies part way, readers do not look past
that offset and the repair truncates the file back to it: a batch is kept whole or
not at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from agentkit.errors import StoreError
from agentkit.events import Event, EventDraft
from agentkit.store._fs import exclusive, shared, unlink, write_all, write_atomic

log = logging.getLogger(__name__)


def encode_line(event: Event) -> bytes:
    try:
        return event.to_json().encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8; JSON escapes keep them losslessly.
        wire = json.dumps(event.to_wire(), separators=(",", ":"), ensure_ascii=True)
        return wire.encode("ascii") + b"\n"


class EventLog:
    """The parsed view of one `events.ndjson`. Appends need the session's lock held."""

    def __init__(self, path: Path, session_id: str, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path
        self.pending = path.with_name(path.name + ".pending")
        self.session_id = session_id
        self._mutex = threading.Lock()
        self._events: list[Event] = []
        self._offset = 0
        self._inode: int | None = None

    @property
    def cached_bytes(self) -> int:
        """About how much of the file the view holds parsed."""
        return self._offset

    def read(self, start: int, limit: int | None) -> list[Event] | None:
        """Events from `start` (at most `limit`), or None when the file is gone."""
        end = None if limit is None else max(0, start) + max(0, limit)
        with self._mutex:
            if self._up_to_date():
                return self._events[max(0, start) : end]
        # New bytes: read them under the shared lock, so no writer is half way through.
        # (The session lock is always taken before the mutex, never after.)
        with shared(self.lock_path), self._mutex:
            if not self._catch_up():
                return None
            found = self._events[max(0, start) : end]
            torn = self._interrupted()
        if torn:
            # No writer is live while we hold the lock shared, so leftovers are a crash's.
            with exclusive(self.lock_path), self._mutex:
                if self._catch_up():
                    self._repair()
        return found

    def size(self) -> int | None:
        """How many events the log holds; None when the file is gone."""
        found = self.read(1 << 62, 0)
        return None if found is None else len(self._events)

    def append(self, drafts: Sequence[EventDraft], *, fsync: bool) -> list[Event]:
        """Write drafts with the next indexes. The caller holds the session lock."""
        with self._mutex:
            if not self._catch_up():
                raise FileNotFoundError(self.path)
            self._repair()
            start = len(self._events)
            recorded = [
                Event.from_draft(d, session_id=self.session_id, index=start + i)
                for i, d in enumerate(drafts)
            ]
            if not recorded:
                return []
            data = b"".join(encode_line(e) for e in recorded)
            if len(recorded) > 1:
                write_atomic(self.pending, str(self._offset).encode(), fsync=fsync)
            self._write(data, fsync=fsync)
            unlink(self.pending)
            self._events.extend(recorded)
            self._offset += len(data)
            return recorded

    def _write(self, data: bytes, *, fsync: bool) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            try:
                write_all(fd, data)
                if fsync:
                    os.fsync(fd)
            except OSError as exc:
                # Leave no partial line behind (a full disk, say) for the next append.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self._offset)
                unlink(self.pending)
                raise StoreError(f"could not append to session {self.session_id}: {exc}") from exc
        finally:
            os.close(fd)

    def _interrupted(self) -> bool:
        """Whether bytes past the view are left from an interrupted write (lock held)."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return False
        return size != self._offset or self.pending.exists()

    def _repair(self) -> None:
        """Cut a torn tail or an unfinished batch. Only safe with the session lock held."""
        if not self._interrupted():
            return
        size = os.stat(self.path).st_size
        log.warning(
            "session %s: dropping %d bytes of an interrupted write in %s",
            self.session_id,
            size - self._offset,
            self.path.name,
        )
        os.truncate(self.path, self._offset)
        unlink(self.pending)

    def _up_to_date(self) -> bool:
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return st.st_ino == self._inode and st.st_size == self._offset

    def _catch_up(self) -> bool:
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            self._reset(None)
            return False
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._reset(st.st_ino)
        if st.st_size == self._offset:
            return True
        limit = min(st.st_size, self._pending_start())
        if limit <= self._offset:
            return True
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            chunk = f.read(limit - self._offset)
        end = chunk.rfind(b"\n")
        if end < 0:
            return True
        self._parse(chunk, end)
        self._offset += end + 1
        return True

    def _parse(self, chunk: bytes, end: int) -> None:
        # One `json.loads` over the whole run of lines is several times faster than one per
        # line (raw newlines only ever separate lines: JSON escapes them inside strings).
        try:
            raws = json.loads(b"[" + chunk[:end].replace(b"\n", b",") + b"]")
        except ValueError:
            raws = None
        if not isinstance(raws, list):
            start = len(self._events)
            lines = chunk[:end].split(b"\n")
            raws = [self._parse_line(start + n, line) for n, line in enumerate(lines)]
        # Parsed aside first, so a damaged line leaves the view as it was.
        parsed: list[Event] = []
        expected = len(self._events)
        for raw in raws:
            try:
                event = Event(
                    raw["type"], raw["index"], raw["sessionId"], raw["at"],
                    raw.get("data") or {}, raw.get("turnId"),
                )  # fmt: skip
            except (KeyError, TypeError, AttributeError) as exc:
                raise self._corrupt(expected, f"malformed event: {exc!r}") from exc
            if event.index != expected:
                raise self._corrupt(expected, f"it has index {event.index}")
            parsed.append(event)
            expected += 1
        self._events.extend(parsed)

    def _parse_line(self, position: int, line: bytes) -> object:
        try:
            return json.loads(line)
        except ValueError as exc:
            raise self._corrupt(position, f"unreadable line: {exc}") from exc

    def _corrupt(self, position: int, what: str) -> StoreError:
        return StoreError(
            f"session {self.session_id}: {self.path.name} is damaged at event #{position} "
            f"(line {position + 1}): {what}"
        )

    def _pending_start(self) -> int:
        try:
            return int(self.pending.read_bytes() or b"0")
        except FileNotFoundError:
            return 1 << 62
        except ValueError:
            # Markers are written atomically, so this is damage, not a batch in flight.
            log.warning("session %s: ignoring an unreadable %s", self.session_id, self.pending)
            return 1 << 62

    def _reset(self, inode: int | None) -> None:
        self._events = []
        self._offset = 0
        self._inode = inode
