"""One session's `events.ndjson`: a parsed, incrementally refreshed view and the append path.

The file is the truth; the view caches the events parsed so far and the byte offset they
end at. A read first `stat`s the file: if nothing was appended since (by any process), it
is a list slice. Otherwise the new bytes are read under the session's lock held shared, so
no writer is half way through them, and only complete lines count.

Writers hold the lock exclusively. A writer killed mid-write leaves a torn last line (no
trailing newline): the next reader or appender to hold the lock finds it and cuts it off.

A batch of several events is written in one `write` whose first byte is `#` instead of the
first line's `{`; once the whole batch is written, one more 1-byte write puts the `{` back.
A line starting with `#` is therefore a batch whose writer died part way: readers stop
before it and the repair truncates the file there, so a batch is kept whole or not at all.
(This costs one extra small write per batch and no other file; a separate marker file cost
a file creation per session and two more opens per batch. A marker file
`events.ndjson.pending` holding a batch's start offset, as earlier versions wrote, is still
honoured.)
"""

from __future__ import annotations

import contextlib
import json
import logging
import operator
import os
import threading
from collections.abc import Sequence
from typing import Any

import msgspec

from agentkit.errors import StoreError
from agentkit.events import Event, EventDraft
from agentkit.store._fs import StrPath, exclusive, pwrite_all, read_small, shared, unlink

log = logging.getLogger(__name__)

# An append that first has to parse more than this many new bytes runs in a worker thread.
_CHEAP_CATCH_UP = 64 << 10
BATCH_OPEN = b"#"  # the first byte of a batch until all of it is written
# Decodes a run of lines straight into `Event`s, checking the envelope's types as it goes.
_DECODER = msgspec.json.Decoder(Event)
_INDEX = operator.attrgetter("index")


class CatchUpTooLarge(Exception):
    """An append asked to stay cheap would first have to parse many new bytes."""


class EventLog:
    """The parsed view of one `events.ndjson`. Appends need the session's lock held."""

    def __init__(
        self, path: StrPath, session_id: str, lock_path: StrPath, *, cached: bool = True
    ) -> None:
        self.path = str(path)
        # False: every read and append parses the whole file again (the slow path alone),
        # so the contract suite can check that the incremental view agrees with it.
        self.cached = cached
        self.name = os.path.basename(self.path)
        self.lock_path = lock_path
        self.pending = self.path + ".pending"
        self.session_id = session_id
        self._mutex = threading.Lock()
        self._events: list[Event] = []
        self._offset = 0
        self._seen_size: int | None = None  # the size `_catch_up` last saw
        self._inode: int | None = None
        self._no_marker = False  # the legacy batch marker is known to be gone
        # The file kept open for writing between appends (an `open` per append was a good
        # part of a turn's cost), with the inode it was opened on. Used and closed only
        # under `_mutex`, so a close never races a write through a reused descriptor.
        self._wfd: int | None = None
        self._wfd_inode: int | None = None
        # How long `FileStore.follow` last waited between checks of this quiet session for
        # other processes' appends; None once it found events (the back-off starts over).
        self.follow_gap: float | None = None

    def close(self) -> None:
        """Close the kept write descriptor (the view stays usable: it reopens on need)."""
        with self._mutex:
            self._close_writer()

    def _close_writer(self) -> None:
        if self._wfd is not None:
            fd, self._wfd, self._wfd_inode = self._wfd, None, None
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        if self._wfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._wfd)

    def adopt_writer(self, fd: int) -> None:
        """Keep `fd`, just opened for writing on this log's file (by the session's creation),
        as the descriptor appends write through: the first append need not open it again."""
        try:
            inode = os.fstat(fd).st_ino
        except BaseException:
            os.close(fd)
            raise
        with self._mutex:
            self._close_writer()
            self._wfd, self._wfd_inode = fd, inode

    def _writer(self) -> int:
        # `_catch_up` just `stat`ed the path under the session lock: `_inode` is the file
        # there now, so a descriptor opened on an older (deleted, replaced) file is renewed.
        if self._wfd is None or self._wfd_inode != self._inode:
            self._close_writer()
            self._wfd = os.open(self.path, os.O_WRONLY)
            self._wfd_inode = self._inode
        return self._wfd

    @property
    def cached_bytes(self) -> int:
        """About how much of the file the view holds parsed."""
        return self._offset

    def read(self, start: int, limit: int | None) -> list[Event] | None:
        """Events from `start` (at most `limit`), or None when the file is gone."""
        with self._mutex:
            if self._up_to_date():
                return self._slice(start, limit)
        # New bytes: read them under the shared lock, so no writer is half way through.
        # (The session lock is always taken before the mutex, never after.) The lock file
        # is in the session's folder: when it cannot be opened, the session is gone.
        try:
            with shared(self.lock_path), self._mutex:
                if not self._catch_up():
                    return None
                found = self._slice(start, limit)
                torn = self._interrupted()
            if torn:
                # No writer is live while we hold the lock shared: leftovers are a crash's.
                with exclusive(self.lock_path), self._mutex:
                    if self._catch_up():
                        self._repair()
        except FileNotFoundError:
            return None
        return found

    def read_cached(self, start: int, limit: int | None) -> list[Event] | None:
        """Like `read`, but only when nothing was appended since the view was last brought
        up to date (a `stat`, no lock); None means "call `read`"."""
        with self._mutex:
            return self._slice(start, limit) if self._up_to_date() else None

    def read_locked(self, start: int, limit: int | None) -> list[Event] | None:
        """`read` for a caller that holds the session lock exclusively (so it may also cut
        a torn tail at once)."""
        with self._mutex:
            if not self._catch_up():
                return None
            self._repair(self._seen_size)  # nobody wrote since: we hold the lock
            return self._slice(start, limit)

    def _slice(self, start: int, limit: int | None) -> list[Event]:
        """The events from `start`, at most `limit` of them: the one slicing every read
        path ends in (the view is current when called, under `_mutex`)."""
        first = max(0, start)
        return self._events[first : None if limit is None else first + max(0, limit)]

    def size_cached(self) -> int | None:
        """Like `size`, under the same condition as `read_cached`."""
        with self._mutex:
            return len(self._events) if self._up_to_date() else None

    def cheap_to_append(self) -> bool:
        """Whether an append needs no more than a small catch-up first (no lock needed to
        ask; the answer only decides where the append runs, not whether it is safe)."""
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return True  # the append fails fast
        # A replaced file (or a view never filled) is read from its start.
        parsed = self._offset if st.st_ino == self._inode else 0
        return st.st_size - parsed <= _CHEAP_CATCH_UP

    def size(self) -> int | None:
        """How many events the log holds; None when the file is gone."""
        found = self.read(1 << 62, 0)
        return None if found is None else len(self._events)

    def append(
        self, drafts: Sequence[EventDraft], *, fsync: bool, cheap_only: bool = False
    ) -> list[Event]:
        """Write drafts with the next indexes. The caller holds the session lock.

        `cheap_only`: raise `CatchUpTooLarge` (having written nothing) rather than first
        parse more new bytes than an event-loop thread should (see `cheap_to_append`)."""
        with self._mutex:
            if not self._catch_up(_CHEAP_CATCH_UP if cheap_only else None):
                raise FileNotFoundError(self.path)
            self._repair(self._seen_size)  # nobody wrote since: we hold the lock
            if not self._no_marker:
                # A legacy marker is meaningless once the repair ran, and a stale one would
                # hide (and later cut) what is appended past its offset.
                unlink(self.pending)
                self._no_marker = True
            start = len(self._events)
            recorded = [
                Event.from_draft(d, session_id=self.session_id, index=start + i)
                for i, d in enumerate(drafts)
            ]
            if not recorded:
                return []
            data = b"".join(e.to_line() for e in recorded)
            self._write(data, batch=len(recorded) > 1, fsync=fsync)
            self._events.extend(recorded)
            self._offset += len(data)
            return recorded

    def _write(self, data: bytes, *, batch: bool, fsync: bool) -> None:
        # Positioned writes at the end we know (the lock is held and `_repair` ran), not
        # O_APPEND: Linux ignores pwrite's offset on a file opened for appending.
        fd = self._writer()
        try:
            pwrite_all(fd, BATCH_OPEN + data[1:] if batch else data, self._offset)
            if fsync:
                os.fsync(fd)
            if batch:
                pwrite_all(fd, data[:1], self._offset)  # the batch is whole: show it
                if fsync:
                    os.fsync(fd)
        except OSError as exc:
            # Leave no partial line behind (a full disk, say) for the next append.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._offset)
            self._close_writer()
            unlink(self.pending)
            raise StoreError(f"could not append to session {self.session_id}: {exc}") from exc

    def _interrupted(self, size: int | None = None) -> bool:
        """Whether bytes past the view are left from an interrupted write (lock held);
        `size`: the file's size, when the caller knows it."""
        if size is None:
            try:
                size = os.stat(self.path).st_size
            except FileNotFoundError:
                return False
        # A legacy marker needs no look here: `_catch_up` never reads past one, so a batch
        # it announces that was cut short leaves bytes past the view.
        return size != self._offset

    def _repair(self, size: int | None = None) -> None:
        """Cut a torn tail or an unfinished batch. Only safe with the session lock held
        (held since `size` was seen, when it is given)."""
        if not self._interrupted(size):
            return
        size = os.stat(self.path).st_size
        log.warning(
            "session %s: dropping %d bytes of an interrupted write in %s",
            self.session_id,
            size - self._offset,
            self.name,
        )
        os.truncate(self.path, self._offset)
        unlink(self.pending)

    def _up_to_date(self) -> bool:
        if not self.cached:
            return False
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return st.st_ino == self._inode and st.st_size == self._offset

    def _catch_up(self, at_most: int | None = None) -> bool:
        if not self.cached:
            self._reset(None)  # parse it all again
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            self._reset(None)
            return False
        self._seen_size = st.st_size
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._reset(st.st_ino)
        if st.st_size == self._offset:
            return True
        if at_most is not None and st.st_size - self._offset > at_most:
            raise CatchUpTooLarge(self.path)
        limit = min(st.st_size, self._pending_start())
        if limit <= self._offset:
            return True
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            chunk = f.read(limit - self._offset)
        if chunk.startswith(BATCH_OPEN):
            return True  # an unfinished batch: nothing past it counts
        end = chunk.rfind(b"\n")
        if end < 0:
            return True
        decoded = self._decode(chunk, end)
        if decoded is None:
            # Refused: maybe an unfinished batch (a line starting with `#`, left by a
            # crash), before which the lines count; looked for only now, as it is rare.
            cut = chunk.find(b"\n" + BATCH_OPEN, 0, end + 1)
            if cut >= 0:
                end = cut
                decoded = self._decode(chunk, end)
        if decoded is None:
            self._parse_slow(chunk, end)
        else:
            self._events.extend(decoded)
        self._offset += end + 1
        return True

    def _decode(self, chunk: bytes, end: int) -> list[Event] | None:
        """The events of `chunk[:end]` decoded in one call, or None if msgspec refuses
        them (a damaged line, a `null` payload, `NaN` from an older writer: the lenient
        `_parse_slow` then decides, and names a damaged line)."""
        try:
            decoded = _DECODER.decode_lines(memoryview(chunk)[:end])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        first = len(self._events)
        if list(map(_INDEX, decoded)) != list(range(first, first + len(decoded))):
            for n, event in enumerate(decoded, start=first):
                if event.index != n:
                    raise self._corrupt(n, f"it has index {event.index}")
        return decoded

    def _parse_slow(self, chunk: bytes, end: int) -> None:
        expected = len(self._events)
        lines = chunk[:end].split(b"\n")
        raws = [self._parse_line(expected + n, line) for n, line in enumerate(lines)]
        # Parsed aside first, so a damaged line leaves the view as it was.
        parsed: list[Event] = []
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

    def _parse_line(self, position: int, line: bytes) -> Any:
        try:
            return json.loads(line)
        except ValueError as exc:
            raise self._corrupt(position, f"unreadable line: {exc}") from exc

    def _corrupt(self, position: int, what: str) -> StoreError:
        return StoreError(
            f"session {self.session_id}: {self.name} is damaged at event #{position} "
            f"(line {position + 1}): {what}"
        )

    def _pending_start(self) -> int:
        raw = read_small(self.pending)
        try:
            return int(raw) if raw else 1 << 62
        except ValueError:
            # A marker is one small write, never torn by a kill: this is damage.
            log.warning("session %s: ignoring an unreadable %s", self.session_id, self.pending)
            return 1 << 62

    def _reset(self, inode: int | None) -> None:
        self._no_marker = False
        self._events = []
        self._offset = 0
        self._inode = inode
