"""Provider settings read from the environment."""

from __future__ import annotations

import os

from agentkit.errors import ModelError


def thinking_budget_from_env() -> int | None:
    """`AGENTKIT_THINKING_BUDGET` as a token count, or None when unset or zero."""
    raw = os.environ.get("AGENTKIT_THINKING_BUDGET", "").strip()
    if not raw:
        return None
    try:
        budget = int(raw)
    except ValueError:
        raise ModelError(
            f"AGENTKIT_THINKING_BUDGET must be a whole number of tokens, not {raw!r}"
        ) from None
    return budget if budget > 0 else None
