"""Simulated pull requests shared by the tools (import-only code: never discovered)."""

from __future__ import annotations

PULL_REQUESTS: dict[int, dict[str, object]] = {
    1: {
        "title": "Add retry to the payment client",
        "author": "dana",
        "checks": "passed",
        "files": ["payments/client.py", "payments/test_client.py"],
        "additions": 42,
        "deletions": 7,
    },
    2: {
        "title": "Rotate the session signing key",
        "author": "lee",
        "checks": "failed",
        "files": ["auth/keys.py", "auth/settings.py"],
        "additions": 15,
        "deletions": 3,
    },
    3: {
        "title": "Rewrite the search indexer",
        "author": "sam",
        "checks": "passed",
        "files": [f"search/indexer_{i}.py" for i in range(12)],
        "additions": 1480,
        "deletions": 960,
    },
}


def get_pr(number: int) -> dict[str, object]:
    """The PR with this number, or a ValueError the model can read."""
    try:
        return {"number": number, **PULL_REQUESTS[number]}
    except KeyError:
        raise ValueError(f"there is no PR #{number}") from None
