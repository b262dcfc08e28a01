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

_THREAD_LOCKS: dict[str, list[Any]] = {}  # path -> [lock, users]
_THREAD_LOCKS_GUARD = threading.Lock()

# Lock files' descriptors are kept open between uses (an `open` per lock taken was a good
# part of a turn's cost). A descriptor is taken out of `_IDLE_FDS` while its lock is held
# exclusively (under the path's thread lock, so at most one per path is ever out) and put
# back after; `_HELD` names it meanwhile, so the lease kept in the lock file is read and
# written through it. Shared holders open their own: threads of one process sharing a
# descriptor would share its `flock` too.
_IDLE_FDS: OrderedDict[str, int] = OrderedDict()
_IDLE_MAX = 256
_HELD: dict[str, int] = {}
_FDS_GUARD = threading.Lock()


def _take_fd(path: StrPath) -> int:
    with _FDS_GUARD:
        fd = _IDLE_FDS.pop(str(path), None)
    return fd if fd is not None else os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def _put_back_fd(path: StrPath, fd: int) -> None:
    with _FDS_GUARD:
        _IDLE_FDS[str(path)] = fd
        while len(_IDLE_FDS) > _IDLE_MAX:
            os.close(_IDLE_FDS.popitem(last=False)[1])


def _forget_fds() -> None:
    # A forked child must not lock through its parent's open file descriptions (a flock
    # belongs to the description, so both would "hold" it): it opens its own.
    for fd in _IDLE_FDS.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _IDLE_FDS.clear()
    _HELD.clear()


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


@contextlib.contextmanager
def _thread_lock(key: str) -> Iterator[None]:
    # One lock per path while anyone uses it, dropped after, so the table stays small.
    with _THREAD_LOCKS_GUARD:
        entry = _THREAD_LOCKS.get(key)
        if entry is None:
            entry = _THREAD_LOCKS[key] = [threading.Lock(), 0]
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _THREAD_LOCKS_GUARD:
            entry[1] -= 1
            if entry[1] == 0:
                del _THREAD_LOCKS[key]


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
    def _process_lock(path: StrPath) -> Iterator[None]:
        # Called with the path's thread lock held (`exclusive`): see `_IDLE_FDS`.
        fd = _take_fd(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        _HELD[str(path)] = fd
        try:
            yield
        finally:
            del _HELD[str(path)]
            _unlock_and_put_back(path, fd)

    def _unlock_and_put_back(path: StrPath, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)  # closing drops the lock too
            raise
        _put_back_fd(path, fd)

    def shared(path: StrPath) -> contextlib.AbstractContextManager[None]:
        """Hold `path` shared: no holder of `exclusive(path)` runs meanwhile, in any process."""
        return _flock(path, fcntl.LOCK_SH)

    def _try_flock(path: StrPath) -> Callable[[], None] | None:
        # Called with the path's thread lock held (`try_exclusive`): see `_IDLE_FDS`.
        fd = _take_fd(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _put_back_fd(path, fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        _HELD[str(path)] = fd

        def release() -> None:
            del _HELD[str(path)]
            _unlock_and_put_back(path, fd)

        return release

else:  # pragma: no cover - exercised only on Windows
    from filelock import FileLock

    @contextlib.contextmanager
    def _process_lock(path: StrPath) -> Iterator[None]:
        with FileLock(str(path), thread_local=False, poll_interval=0.002):
            yield

    def shared(path: StrPath) -> contextlib.AbstractContextManager[None]:
        """Without shared file locks, readers take the lock exclusively."""
        return _process_lock(path)

    def _try_flock(path: StrPath) -> Callable[[], None] | None:
        return None  # callers fall back to the blocking lock in a worker thread


@contextlib.contextmanager
def exclusive(path: StrPath) -> Iterator[None]:
    """Hold the lock file `path` against other threads of this process and other processes.

    Lock files are never deleted: a waiter holding an unlinked lock file's descriptor would
    otherwise share the "lock" with a newcomer who created a fresh file.
    """
    with _thread_lock(str(path)), _process_lock(path):
        yield


def try_exclusive(path: StrPath) -> Callable[[], None] | None:
    """Take `exclusive(path)` only if that needs no waiting; returns the release function,
    or None when another thread or process holds the lock.

    This lets a short operation run on the event loop thread itself: handing it to a worker
    thread costs more than the operation when nobody else holds the lock.
    """
    key = str(path)
    with _THREAD_LOCKS_GUARD:
        entry = _THREAD_LOCKS.get(key)
        if entry is None:
            entry = _THREAD_LOCKS[key] = [threading.Lock(), 0]
        if not entry[0].acquire(blocking=False):
            return None
        entry[1] += 1

    def release_thread_lock() -> None:
        with _THREAD_LOCKS_GUARD:
            entry[0].release()
            entry[1] -= 1
            if entry[1] == 0:
                del _THREAD_LOCKS[key]

    try:
        release_flock = _try_flock(path)
    except BaseException:
        release_thread_lock()
        raise
    if release_flock is None:
        release_thread_lock()
        return None
    flock_release = release_flock

    def release() -> None:
        try:
            flock_release()
        finally:
            release_thread_lock()

    return release
