"""`serve --dev` with two agents in the multi layout: each agent under its slug, dev routes
on, the loopback caller an admin who sees every session (schedule sessions included)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.http_server import SLUG, Served, serve_in, write_agent
from tests.server.helpers import read_stream, start_session

pytestmark = pytest.mark.slow(reason="serves two agents under --dev")
SECOND = "frontdesk"


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("dev")
    second = write_agent(base / SECOND)
    served = serve_in(base, "--dev", "--dir", str(second))
    yield served
    served.stop()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def test_both_agents_are_mounted_under_their_slugs(
    client: httpx.Client, dev_server: Served
) -> None:
    agents = client.get(f"{dev_server.root_url}/v1/agents").json()["agents"]
    assert sorted(a["slug"] for a in agents) == sorted([SLUG, SECOND])
    for slug in (SLUG, SECOND):
        meta = client.get(f"{dev_server.root_url}/{slug}/v1/meta").json()
        assert meta["basePath"] == f"/{slug}" and meta["dev"] is True


def test_agents_keep_separate_sessions(client: httpx.Client, dev_server: Served) -> None:
    sid = start_session(client, dev_server.url, "weather in Ghent")["sessionId"]
    other = f"{dev_server.root_url}/{SECOND}"
    assert client.get(f"{other}/v1/session/{sid}/events").status_code == 404
    listed = client.get(f"{other}/v1/sessions").json()["sessions"]
    assert sid not in [s["sessionId"] for s in listed]
    assert Path(dev_server.state_root / SLUG).is_dir()


def test_dispatched_schedule_runs_a_task_session_that_takes_no_follow_ups(
    client: httpx.Client, dev_server: Served
) -> None:
    url = dev_server.url
    fired = client.post(f"{url}/v1/dev/schedules/digest")
    assert fired.status_code == 200, fired.text
    [sid] = fired.json()["sessionIds"]
    events = read_stream(
        client,
        url,
        sid,
        until=lambda e: e["type"].startswith("session.") and e["type"] != "session.started",
    )
    assert events[-1]["type"] == "session.completed"

    listed = client.get(f"{url}/v1/sessions").json()["sessions"]
    assert [s["mode"] for s in listed if s["sessionId"] == sid] == ["task"]
    refused = client.post(
        f"{url}/v1/session/{sid}", json={"continuationToken": "http:any", "message": "more"}
    )
    assert refused.status_code == 409
    assert refused.json()["error"] == "not_followable"


def test_unknown_schedule_is_404(client: httpx.Client, dev_server: Served) -> None:
    r = client.post(f"{dev_server.url}/v1/dev/schedules/nope")
    assert r.status_code == 404
    assert r.json()["ok"] is False


def test_dev_routes_are_absent_without_dev(client: httpx.Client, shared_server: Served) -> None:
    r = client.post(f"{shared_server.url}/v1/dev/schedules/digest")
    assert r.status_code == 404


def test_task_stream_ends_after_the_session_completes(
    client: httpx.Client, dev_server: Served
) -> None:
    sid = client.post(f"{dev_server.url}/v1/dev/schedules/digest").json()["sessionIds"][0]
    started = time.monotonic()
    # No `until`: the server itself closes the stream after session.completed, long
    # before the window would.
    events = read_stream(client, dev_server.url, sid, window=60)
    assert events[-1]["type"] == "session.completed"
    assert time.monotonic() - started < 30
