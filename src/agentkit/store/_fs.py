"""File-system helpers of the file store: atomic writes and cross-process locks."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentkit.errors import StoreError

_THREAD_LOCKS: dict[str, list[Any]] = {}  # path -> [lock, users]
_THREAD_LOCKS_GUARD = threading.Lock()


def write_atomic(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, never a mix.

    The bytes go to a temporary file beside `path` (same folder, so the same file system),
    optionally flushed to disk, then `os.replace` swaps it in.
    """
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, value: Any, *, fsync: bool = True) -> None:
    write_atomic(path, json.dumps(value, ensure_ascii=False).encode("utf-8"), fsync=fsync)


def read_json(path: Path) -> Any | None:
    """The parsed file, or None when it does not exist."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise StoreError(f"corrupt store file {path.name}: {exc}") from exc


def write_all(fd: int, data: bytes) -> None:
    """`os.write` until every byte is written (a regular file may take a short write)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def unlink(path: Path) -> bool:
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
    def _flock(path: Path, mode: int) -> Iterator[None]:
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

    def _process_lock(path: Path) -> contextlib.AbstractContextManager[None]:
        return _flock(path, fcntl.LOCK_EX)

    def shared(path: Path) -> contextlib.AbstractContextManager[None]:
        """Hold `path` shared: no holder of `exclusive(path)` runs meanwhile, in any process."""
        return _flock(path, fcntl.LOCK_SH)

else:  # pragma: no cover - exercised only on Windows
    from filelock import FileLock

    @contextlib.contextmanager
    def _process_lock(path: Path) -> Iterator[None]:
        with FileLock(str(path), thread_local=False, poll_interval=0.002):
            yield

    def shared(path: Path) -> contextlib.AbstractContextManager[None]:
        """Without shared file locks, readers take the lock exclusively."""
        return _process_lock(path)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock file `path` against other threads of this process and other processes.

    Lock files are never deleted: a waiter holding an unlinked lock file's descriptor would
    otherwise share the "lock" with a newcomer who created a fresh file.
    """
    with _thread_lock(str(path)), _process_lock(path):
        yield
