"""File-system helpers of the file store: atomic writes and cross-process locks."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentkit.errors import StoreError

# Where the file store's hot paths pass plain strings (see `_filepaths`), other callers
# still pass `Path`s.
StrPath = str | Path


class _Slot:
    """A lock file's place in this process: the thread lock that orders this process's
    users of it, and the descriptor exclusive holders `flock` through.

    The descriptor stays open between uses (an `open` per lock taken was a good part of a
    turn's cost); only the holder of `lock` touches it, and `_HELD` names it meanwhile, so
    the lease kept in the lock file is read and written through it. Shared holders open
    their own: threads of one process sharing a descriptor would share its `flock` too.
    """

    __slots__ = ("fd", "files", "key", "lock", "users")

    def __init__(self, key: str) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.users = 0  # holders and waiters; only an unused slot may be dropped
        self.fd: int | None = None
        # Other files its holders keep open with it (`held_file`): path -> (fd, inode).
        self.files: dict[str, tuple[int, int]] = {}

    def close_files(self) -> None:
        for fd in [self.fd, *(fd for fd, _ in self.files.values())]:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = None
        self.files.clear()

    def release(self) -> None:
        """Let go of an exclusive hold taken by `try_exclusive`."""
        try:
            _funlock(self)
        finally:
            _leave(self)


# Slots by lock-file path, least recently used first. Unused slots beyond `_SLOTS_KEPT`
# are dropped (their descriptors closed), so the table and the open files stay bounded.
_SLOTS: OrderedDict[str, _Slot] = OrderedDict()
_SLOTS_KEPT = 256
_GUARD = threading.Lock()
_HELD: dict[str, int] = {}


def _enter(key: str) -> _Slot:
    """The slot of `key`, counted as used (call with `_GUARD` held)."""
    slot = _SLOTS.get(key)
    if slot is None:
        slot = _SLOTS[key] = _Slot(key)
        slot.users += 1
        if len(_SLOTS) > _SLOTS_KEPT:
            _drop_unused(len(_SLOTS) - _SLOTS_KEPT)
    else:
        _SLOTS.move_to_end(key)
        slot.users += 1
    return slot


def _drop_unused(count: int) -> None:
    # Oldest first. An unused slot has no holder and no waiter, so nobody is about to use
    # its descriptor (a newcomer counts itself in under `_GUARD` first).
    unused: list[_Slot] = []
    for slot in _SLOTS.values():
        if slot.users == 0:
            unused.append(slot)
            if len(unused) == count:
                break
    for slot in unused:
        del _SLOTS[slot.key]
        slot.close_files()


def _leave(slot: _Slot) -> None:
    """Release the slot's thread lock and stop counting this user."""
    with _GUARD:
        slot.users -= 1
        slot.lock.release()


def held_file(lock: StrPath, path: str, inode: int | None, flags: int) -> tuple[int, bool]:
    """A descriptor of `path` for the exclusive holder of `lock` (this thread), kept open
    with the lock between holds, and whether it was just created. `inode`: the file's inode
    as the caller saw it under the lock (None: no file yet); a kept descriptor of another
    inode (the file was replaced) is closed and the path opened again."""
    slot = _SLOTS.get(str(lock))  # there while held: only an unused slot is ever dropped
    if slot is None:
        raise StoreError(f"{os.path.basename(path)} written without its lock held")
    kept = slot.files.get(path)
    if kept is not None:
        if kept[1] == inode:
            return kept[0], False
        del slot.files[path]
        with contextlib.suppress(OSError):
            os.close(kept[0])
    try:
        fd, created = os.open(path, flags), False
    except FileNotFoundError:
        fd, created = os.open(path, flags | os.O_CREAT, 0o600), True
    try:
        slot.files[path] = (fd, os.fstat(fd).st_ino)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def _forget_fds() -> None:
    # A forked child must not lock through its parent's open file descriptions (a flock
    # belongs to the description, so both would "hold" it): it opens its own. Thread locks
    # held by the parent's threads are dropped with their slots.
    global _GUARD
    for slot in _SLOTS.values():
        slot.close_files()
    _SLOTS.clear()
    _HELD.clear()
    _GUARD = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_fds)


def write_atomic(path: StrPath, data: bytes, *, fsync: bool = True) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, never a mix.

    The bytes go to a temporary file beside `path` (same folder, so the same file system),
    then `os.replace` swaps it in. With `fsync` the bytes and then the folder (the rename)
    are flushed to disk, so the new version also survives a power cut.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if fsync:
            fsync_folder(path.parent)  # the rename itself, so the new name survives too
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fsync_folder(folder: StrPath) -> None:
    """Flush a folder's entries (a new or renamed name) to disk, where that is possible."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not possible everywhere (Windows); the contents are flushed anyway
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_in_place(path: StrPath, data: bytes, width: int) -> None:
    """Overwrite `path` with `data` padded with spaces to `width` bytes (created if missing).

    Not atomic for readers: callers hold a lock that readers take too. It is many times
    cheaper than `write_atomic` (creating a file) or truncating one to zero (ext4 then
    flushes the file on close). Same-width rewrites never leave old bytes behind; a longer
    earlier content is cut to the new length. Readers strip the padding.
    """
    padded = data.ljust(width)
    held = _HELD.get(str(path))
    fd = held if held is not None else os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        pwrite_all(fd, padded, 0)
        if os.fstat(fd).st_size > len(padded):
            os.ftruncate(fd, len(padded))
    finally:
        if held is None:
            os.close(fd)


def read_small(path: StrPath) -> bytes | None:
    """The whole of a small file (padding stripped), or None when it does not exist."""
    held = _HELD.get(str(path))
    if held is not None:  # a lock file this thread holds (see `_HELD`)
        chunks, at = [], 0
        while chunk := os.pread(held, 4096, at):
            chunks.append(chunk)
            at += len(chunk)
            if len(chunk) < 4096:
                break  # a regular file's short read is its end: no second call to learn it
        return b"".join(chunks).strip()
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).strip()


def write_json_atomic(path: StrPath, value: Any, *, fsync: bool = True) -> None:
    write_atomic(path, json.dumps(value, ensure_ascii=False).encode("utf-8"), fsync=fsync)


def read_json(path: StrPath) -> Any | None:
    """The parsed file, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise StoreError(f"corrupt store file {os.path.basename(path)}: {exc}") from exc


def write_all(fd: int, data: bytes) -> None:
    """`os.write` until every byte is written (a regular file may take a short write)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    """Write all of `data` at `offset` (the descriptor's own position is not relied on)."""
    if not hasattr(os, "pwrite"):  # pragma: no cover - Windows has no pwrite
        os.lseek(fd, offset, os.SEEK_SET)
        write_all(fd, data)
        return
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def unlink(path: StrPath) -> bool:
    """Remove a file; False if it was not there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


if sys.platform != "win32":
    import fcntl

    @contextlib.contextmanager
    def _flock(path: StrPath, mode: int) -> Iterator[None]:
        # A blocking flock wakes as soon as the holder lets go (or dies: the kernel drops
        # a dead process's locks); filelock's portable lock polls instead. Each call opens
        # its own descriptor, so threads of one process exclude each other too.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, mode)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _process_lock(slot: _Slot) -> Iterator[None]:
        # With the slot's thread lock held (`exclusive`): see `_Slot`.
        fd = _descriptor(slot)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD[slot.key] = fd
        try:
            yield
        finally:
            _funlock(slot)

    def _descriptor(slot: _Slot) -> int:
        if slot.fd is None:
            slot.fd = os.open(slot.key, os.O_RDWR | os.O_CREAT, 0o600)
        return slot.fd

    def _funlock(slot: _Slot) -> None:
        del _HELD[slot.key]
        fd = slot.fd
        assert fd is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            slot.fd = None
            os.close(fd)  # closing drops the lock too
            raise

    def shared(path: StrPath) -> contextlib.AbstractContextManager[None]:
        """Hold `path` shared: no holder of `exclusive(path)` runs meanwhile, in any process."""
        return _flock(path, fcntl.LOCK_SH)

    def _try_flock(slot: _Slot) -> bool:
        # With the slot's thread lock held (`try_exclusive`): see `_Slot`.
        fd = _descriptor(slot)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        _HELD[slot.key] = fd
        return True

else:  # pragma: no cover - exercised only on Windows
    from filelock import FileLock

    @contextlib.contextmanager
    def _file_lock(path: StrPath) -> Iterator[None]:
        with FileLock(str(path), thread_local=False, poll_interval=0.002):
            yield

    def _process_lock(slot: _Slot) -> contextlib.AbstractContextManager[None]:
        return _file_lock(slot.key)

    def _funlock(slot: _Slot) -> None:
        raise AssertionError("no lock is taken without waiting here")

    def shared(path: StrPath) -> contextlib.AbstractContextManager[None]:
        """Without shared file locks, readers take the lock exclusively."""
        return _file_lock(path)

    def _try_flock(slot: _Slot) -> bool:
        return False  # callers fall back to the blocking lock in a worker thread


@contextlib.contextmanager
def exclusive(path: StrPath) -> Iterator[None]:
    """Hold the lock file `path` against other threads of this process and other processes.

    A lock file is removed only with its session's folder (see `files.py`): a waiter holding
    an unlinked lock file's descriptor would otherwise share the "lock" with a newcomer who
    created a fresh file at the same path.
    """
    with _GUARD:
        slot = _enter(str(path))
    try:
        slot.lock.acquire()
    except BaseException:
        with _GUARD:
            slot.users -= 1
        raise
    try:
        with _process_lock(slot):
            yield
    finally:
        _leave(slot)


def try_exclusive(path: StrPath) -> Callable[[], None] | None:
    """Take `exclusive(path)` only if that needs no waiting; returns the release function,
    or None when another thread or process holds the lock.

    This lets a short operation run on the event loop thread itself: handing it to a worker
    thread costs more than the operation when nobody else holds the lock.
    """
    with _GUARD:
        slot = _enter(str(path))
        if not slot.lock.acquire(blocking=False):
            slot.users -= 1
            return None
    try:
        taken = _try_flock(slot)
    except BaseException:
        _leave(slot)
        raise
    if not taken:
        _leave(slot)
        return None
    return slot.release
