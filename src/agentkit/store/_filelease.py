"""The turn lease and the stop flag of the file store (see the layout in `files.py`).

The lease lives in the session's lock file, rewritten in place under that lock; the stop
flag is the `interrupt` file, blank (any turn) or naming the turn it stops.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TypeVar

import msgspec

from agentkit.errors import SessionNotFound
from agentkit.store._filepaths import PathCache, SessionLocking
from agentkit.store._filesession import RecordCache
from agentkit.store._fs import read_small, unlink, write_in_place
from agentkit.store.base import Lease

T = TypeVar("T")

_LEASE_WIDTH = 192  # the lease is rewritten in place at this width (longer holders fit too)
_JSON = msgspec.json.Encoder()  # a tenth of `json.dumps`'s cost for these small objects
# Lease file contents already parsed (`Lease` is frozen, so one may be shared). Every
# append of a turn reads the same bytes back. Kept for bench/bench_turn.py: without it the
# follow-up (file) row took about 0.15 ms a turn longer (paired, 2026-12).
_LEASES: dict[bytes, tuple[Lease | None]] = {}
_LEASES_KEPT = 1024


def _remember_lease(data: bytes, lease: Lease | None) -> None:
    if len(_LEASES) >= _LEASES_KEPT:
        _LEASES.clear()
    _LEASES[data] = (lease,)


def _parse_lease(data: bytes) -> Lease | None:
    try:
        raw = json.loads(data or b"null")
        # The holder's process: `agentkit serve` leaves a live process's lease alone.
        pid = raw.get("pid") if isinstance(raw, dict) else None
        return Lease(
            holder=str(raw["holder"]),
            expires_at=float(raw["expiresAt"]),
            pid=pid if isinstance(pid, int) else None,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


class FileLeases(SessionLocking):
    """The lease and interrupt methods of `FileStore` (a mixin: it sets the attributes)."""

    _files: PathCache
    _records: RecordCache
    _clock: Callable[[], float]
    _caches: bool

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=True)

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._lease_op(session_id, holder, ttl, take_free=False)

    async def _lease_op(self, session_id: str, holder: str, ttl: float, *, take_free: bool) -> bool:
        files = self._files(session_id)

        def op() -> bool:
            if not files.exists():
                raise SessionNotFound(session_id)
            now = self._clock()
            lease = self._read_lease(files.lease)
            live = lease is not None and lease.expires_at > now
            mine = live and lease is not None and lease.holder == holder
            if not mine and (live or not take_free):
                return False
            pid = os.getpid()
            data = _JSON.encode({"holder": holder, "expiresAt": now + ttl, "pid": pid})
            write_in_place(files.lease, data, _LEASE_WIDTH)
            # The turn's appends read these bytes back next: known, so never parsed.
            if self._caches:
                _remember_lease(data, Lease(holder=holder, expires_at=now + ttl, pid=pid))
            return True

        return await self._locked(session_id, op)

    async def release_lease(self, session_id: str, holder: str) -> None:
        path = self._files(session_id).lease

        def release() -> None:
            lease = self._read_lease(path)
            if lease is not None and lease.holder == holder:
                write_in_place(path, b"", _LEASE_WIDTH)

        await self._locked(session_id, release)

    async def get_lease(self, session_id: str) -> Lease | None:
        files = self._files(session_id)

        def read() -> Lease | None:
            # A lock file outlives its session (and the lease written in it).
            return self._read_lease(files.lease) if files.exists() else None

        lease = await self._locked(session_id, read)
        return lease if lease is not None and lease.expires_at > self._clock() else None

    def _read_lease(self, path: str) -> Lease | None:
        # Rewritten in place under the session lock (creating a file costs far more), so
        # it is read under the lock too. Leases are never flushed to disk: an empty or
        # damaged file (a power cut) is a free lease, which only frees it early.
        data = read_small(path) or b""
        if not self._caches:
            return _parse_lease(data)
        # Every append of a turn reads the same bytes: they are parsed once.
        known = _LEASES.get(data)  # one lookup: another thread may clear the table
        if known is not None:
            return known[0]
        lease = _parse_lease(data)
        _remember_lease(data, lease)
        return lease

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        files = self._files(session_id)

        def flag() -> None:
            if not files.exists():
                raise SessionNotFound(session_id)
            if requested:
                write_in_place(files.interrupt, b"", _LEASE_WIDTH)  # blank: any turn
            else:
                unlink(files.interrupt)

        if not requested and files.exists() and not files.interrupted():
            return  # already clear: every accepted message asks this, so skip the lock
        await self._locked(session_id, flag)

    async def request_interrupt(
        self, session_id: str, turn_id: str, *, token_hash: str | None = None
    ) -> bool:
        files = self._files(session_id)

        def flag() -> bool:
            raw = self._records.read(files.folder)
            if raw is None:
                raise SessionNotFound(session_id)
            if token_hash is not None and raw.get("tokenHash") != token_hash:
                return False
            write_in_place(files.interrupt, turn_id.encode(), _LEASE_WIDTH)
            return True

        # Under the session lock, which token rotations take too: one conditional write.
        return await self._locked(session_id, flag)

    async def interrupt_requested(self, session_id: str, turn_id: str | None = None) -> bool:
        files = self._files(session_id)
        if not files.interrupted():  # one `stat`: the common case
            return False
        try:
            named = (read_small(files.interrupt) or b"").decode()
        except (OSError, UnicodeDecodeError):
            return False
        # An empty file (`set_interrupt`) stops any turn; a turn id, that turn only.
        return not named or named == turn_id
