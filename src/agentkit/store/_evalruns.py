"""Shared rules of the stores' eval-run records: the key, a private copy, the order."""

from __future__ import annotations

import json
from typing import Any

from agentkit.store.ids import validate_name


def run_id_of(snapshot: dict[str, Any]) -> str:
    """The snapshot's `runId`, checked like any other record id."""
    return validate_name(snapshot.get("runId"), "eval run id")  # type: ignore[arg-type]


def detached(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A deep copy through JSON: the store keeps exactly what a reader gets back."""
    out: dict[str, Any] = json.loads(json.dumps(snapshot))
    return out


def newest_first(snapshots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        snapshots, key=lambda s: (str(s.get("createdAt", "")), str(s["runId"])), reverse=True
    )
