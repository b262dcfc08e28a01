"""Reminders and idempotency claims of the file store: one small JSON file each.

Both are rare next to turns, so they keep the simple path: worker threads, and every write
flushed to disk (losing a claim to a power cut would let a delivery run twice).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentkit.errors import StoreError
from agentkit.reminders import ReminderRecord
from agentkit.store._evalruns import detached, newest_first, run_id_of
from agentkit.store._fs import exclusive, read_json, unlink, write_json_atomic
from agentkit.store._offload import offload
from agentkit.store.base import Claim
from agentkit.store.ids import hash_key, validate_idempotency_key, validate_name

_PURGE_EVERY = 600.0


class FileRecords:
    """The reminder and claim methods of `FileStore` (a mixin: it sets the attributes)."""

    _reminders: Path
    root: Path
    _claims: Path
    _locks: Path
    _clock: Callable[[], float]
    _last_purge: float

    # reminders

    async def put_reminder(self, reminder: ReminderRecord) -> None:
        path = self._reminder_path(reminder.id)
        await offload(write_json_atomic, path, reminder.to_dict())

    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None:
        path = self._reminder_path(reminder_id)
        raw = await offload(read_json, path)
        return ReminderRecord.from_dict(raw) if isinstance(raw, dict) else None

    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]:
        def scan() -> list[ReminderRecord]:
            found: list[ReminderRecord] = []
            for entry in os.scandir(self._reminders):
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                raw = read_json(Path(entry.path))
                if isinstance(raw, dict):
                    found.append(ReminderRecord.from_dict(raw))
            return found

        found = await offload(scan)
        if active_only:
            found = [r for r in found if r.status == "active"]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    async def delete_reminder(self, reminder_id: str) -> bool:
        return await offload(unlink, self._reminder_path(reminder_id))

    def _reminder_path(self, reminder_id: str) -> Path:
        return self._reminders / f"{validate_name(reminder_id, 'reminder id')}.json"

    # eval runs: <root>/eval-runs/<runId>.json

    def _eval_run_path(self, run_id: str) -> Path:
        return self.root / "eval-runs" / f"{validate_name(run_id, 'eval run id')}.json"

    async def put_eval_run(self, snapshot: dict[str, Any]) -> None:
        path = self._eval_run_path(run_id_of(snapshot))
        copy = detached(snapshot)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, copy)

        await offload(write)

    async def get_eval_run(self, run_id: str) -> dict[str, Any] | None:
        raw = await offload(read_json, self._eval_run_path(run_id))
        return raw if isinstance(raw, dict) else None

    async def list_eval_runs(self) -> list[dict[str, Any]]:
        folder = self.root / "eval-runs"

        def scan() -> list[dict[str, Any]]:
            if not folder.is_dir():
                return []
            found: list[dict[str, Any]] = []
            for entry in os.scandir(folder):
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                try:
                    raw = read_json(Path(entry.path))
                except (OSError, StoreError):
                    continue  # one unreadable file does not hide the other runs
                if isinstance(raw, dict) and "runId" in raw:
                    found.append(raw)
            return found

        return newest_first(await offload(scan))

    # idempotency

    def _claim_path(self, key: str) -> Path:
        return self._claims / f"{hash_key(validate_idempotency_key(key))}.json"

    async def claim(self, key: str, ttl: float) -> bool:
        path = self._claim_path(key)

        def claim() -> bool:
            with exclusive(self._locks / "_idempotency.lock"):
                now = self._clock()
                raw = read_json(path)
                if isinstance(raw, dict) and float(raw.get("expiresAt", 0)) > now:
                    return False
                write_json_atomic(path, {"expiresAt": now + ttl, "state": "started"})
                if now - self._last_purge > _PURGE_EVERY:
                    self._last_purge = now
                    self._purge_claims(now)
                return True

        return await offload(claim)

    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None:
        path = self._claim_path(key)

        def settle() -> None:
            with exclusive(self._locks / "_idempotency.lock"):
                body = {"expiresAt": self._clock() + ttl, "state": state, "detail": detail}
                write_json_atomic(path, body)

        await offload(settle)

    async def release_claim(self, key: str) -> None:
        path = self._claim_path(key)

        def release() -> None:
            with exclusive(self._locks / "_idempotency.lock"):
                unlink(path)

        await offload(release)

    async def get_claim(self, key: str) -> Claim | None:
        path = self._claim_path(key)
        raw = await offload(read_json, path)
        if not isinstance(raw, dict) or float(raw.get("expiresAt", 0)) <= self._clock():
            return None
        detail = raw.get("detail")
        return Claim(
            str(raw.get("state") or "started"),
            float(raw["expiresAt"]),
            detail if isinstance(detail, str) else None,
        )

    def _purge_claims(self, now: float) -> None:
        for entry in os.scandir(self._claims):
            raw = read_json(Path(entry.path)) if entry.name.endswith(".json") else None
            if isinstance(raw, dict) and float(raw.get("expiresAt", 0)) <= now:
                unlink(Path(entry.path))
