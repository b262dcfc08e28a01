"""Small client-side helpers for the HTTP tests: read NDJSON streams until a condition."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

Event = dict[str, Any]
TURN_END = {"turn.completed", "turn.failed"}


def read_stream(
    client: httpx.Client,
    url: str,
    session_id: str,
    *,
    start: int = 0,
    until: Callable[[Event], bool] | None = None,
    window: float = 20.0,
) -> list[Event]:
    """Events from `start` until `until(event)` holds (inclusive) or the window ends."""
    seen: list[Event] = []
    params: dict[str, Any] = {"startIndex": start, "window": window}
    with client.stream(
        "GET", f"{url}/v1/session/{session_id}/stream", params=params, timeout=window + 10
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("application/x-ndjson")
        for line in response.iter_lines():
            if not line:
                continue
            event = json.loads(line)
            seen.append(event)
            if until is not None and until(event):
                break
    return seen


def turn_ends(count: int = 1) -> Callable[[Event], bool]:
    """A condition that holds on the `count`-th turn end seen."""
    ends = 0

    def check(event: Event) -> bool:
        nonlocal ends
        if event["type"] in TURN_END:
            ends += 1
        return ends >= count

    return check


def of_type(*types: str) -> Callable[[Event], bool]:
    return lambda event: event["type"] in types


def dump(client: httpx.Client, url: str, session_id: str, start: int = 0) -> list[Event]:
    r = client.get(f"{url}/v1/session/{session_id}/events", params={"startIndex": start})
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines() if line]


def start_session(client: httpx.Client, url: str, message: str, **extra: Any) -> dict[str, Any]:
    r = client.post(f"{url}/v1/session", json={"message": message, **extra})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def indexes(events: list[Event]) -> list[int]:
    return [e["index"] for e in events]
