"""What a tool's `reconcile` function answers about a call a crash left in doubt.

A call is in doubt when its process died after the call may have started and before its
result was recorded: the side effect may or may not have happened. `reconcile(input, ctx)`
looks at the outside world (usually the external API, by `ctx.idempotency_key`) and answers
with the call's result (it happened; this is what it returned), `NOT_DONE` (it did not
happen), or `UNKNOWN` (it cannot tell).
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class InDoubt(Enum):
    """The two answers of a `reconcile` function that are not a result."""

    NOT_DONE = "not_done"
    """The effect did not happen (the external API has nothing under the call's key)."""
    UNKNOWN = "unknown"
    """The effect cannot be checked (the API is down, or keeps no record of keys)."""


NOT_DONE = InDoubt.NOT_DONE
UNKNOWN = InDoubt.UNKNOWN

Reconciled = Any | InDoubt
"""What `reconcile` returns: the call's result, `NOT_DONE` or `UNKNOWN`."""

__all__ = ["NOT_DONE", "UNKNOWN", "InDoubt", "Reconciled"]
