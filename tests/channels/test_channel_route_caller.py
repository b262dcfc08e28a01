"""A custom channel route admitted through the agent's auth chain acts for its caller:
the caller owns the sessions it starts and pays for them out of their own daily limit, and
another caller cannot continue them by naming their key. Over HTTP against `agentkit serve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentkit.server.auth import bearer_principal_id
from tests.channels.conftest import CHANNEL_FILES, write
from tests.fixtures.http_server import AGENT_FILES, Served, _env
from tests.server.helpers import read_stream, turn_ends

ALICE, BOB = "tok-alice", "tok-bob"
AGENT = """
    from agentkit import define_agent

    agent = define_agent(model="test", max_steps=6, budget={"principal_daily_tokens": 1})
"""


@pytest.fixture
def served(tmp_path: Path, channel_env: dict[str, str]) -> Iterator[Served]:
    files = {k: v for k, v in AGENT_FILES.items() if "slow_job" not in k}
    project = write(tmp_path / "helpdesk", {**files, **CHANNEL_FILES, "agent/agent.py": AGENT})
    args = ["--bearer-token", ALICE, "--bearer-token", BOB]
    server = Served(project, tmp_path / "state", args, _env(channel_env)).start()
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


def as_caller(token: str) -> httpx.Client:
    return httpx.Client(timeout=30, headers={"authorization": f"Bearer {token}"})


def test_the_admitted_caller_owns_and_pays_for_channel_sessions(served: Served) -> None:
    url = served.url
    with as_caller(ALICE) as alice:
        first = alice.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-1"})
        assert first.status_code == 200, first.text
        sid = first.json()["sessionId"]
        read_stream(alice, url, sid, until=turn_ends())
        listed = {s["sessionId"]: s for s in alice.get(f"{url}/v1/sessions").json()["sessions"]}
        assert listed[sid]["principal"] == bearer_principal_id(ALICE)
        assert listed[sid]["channelId"] == "drive"
        # That turn spent Alice's day, whichever route she asks by next.
        again = alice.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-2"})
        assert again.status_code == 429, again.text
        assert again.json()["error"] == "rate_limited"
        direct = alice.post(f"{url}/v1/session", json={"message": "hello"})
        assert direct.status_code == 429, direct.text
    with as_caller(BOB) as bob:
        # Bob's day is his own.
        own = bob.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-3"})
        assert own.status_code == 200, own.text
        assert own.json()["sessionId"] != sid


def test_another_caller_cannot_continue_a_session_by_its_key(served: Served) -> None:
    url = served.url
    with as_caller(ALICE) as alice:
        first = alice.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-1"})
        sid = first.json()["sessionId"]
        read_stream(alice, url, sid, until=turn_ends())
    with as_caller(BOB) as bob:
        hijack = bob.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-1", "note": "mine"})
        assert hijack.status_code == 403, hijack.text
        assert hijack.json()["ok"] is False
        assert bob.get(f"{url}/v1/sessions").json()["sessions"] == []
        assert bob.get(f"{url}/v1/session/{sid}/events").status_code == 403
    with as_caller(ALICE) as alice:
        events = alice.get(f"{url}/v1/session/{sid}/events").text
    assert "mine" not in events
