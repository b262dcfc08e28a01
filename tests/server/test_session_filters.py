"""`GET /v1/sessions` filters over HTTP against `agentkit serve`: status, principal (admins
only), minimum cost and a window of start times, paged with the cursor."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from agentkit.client import ApiError, AsyncClient, Client
from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.server.helpers import of_type, read_stream, turn_ends

ALICE, BOB, ADMIN = "alice-list-token", "bob-list-token", "admin-list-token"
# Priced, so every session has a cost to filter on (dollars per million tokens).
PRICED_AGENT = """
from agentkit import define_agent

agent = define_agent(model="test", max_steps=6, prices={"test": {"input": 1000, "output": 1000}})
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    flags = ["--bearer-token", ALICE, "--bearer-token", BOB, "--admin-token", ADMIN]
    base = tmp_path_factory.mktemp("filters")
    project = write_agent(base / SLUG, {**AGENT_FILES, "agent/agent.py": PRICED_AGENT})
    server = Served(project, base / "state", flags, _env(None)).start()
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


def client(token: str) -> httpx.Client:
    return httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=30)


@pytest.fixture(scope="module")
def world(served: Served) -> dict[str, list[str]]:
    """Alice: two idle sessions and one parked on an approval; Bob: one idle session."""
    made: dict[str, list[str]] = {"alice_idle": [], "alice_parked": [], "bob_idle": []}
    plan = [
        (ALICE, "What is the weather in Paris?", "alice_idle", turn_ends()),
        (ALICE, "Please wipe the notes.", "alice_parked", of_type("action.approval_requested")),
        (ALICE, "What is the weather in Oslo?", "alice_idle", turn_ends()),
        (BOB, "What is the weather in Rome?", "bob_idle", turn_ends()),
    ]
    for token, message, kind, until in plan:
        with client(token) as http:
            r = http.post(f"{served.url}/v1/session", json={"message": message})
            assert r.status_code == 200, r.text
            sid = r.json()["sessionId"]
            read_stream(http, served.url, sid, until=until)
        made[kind].append(sid)
    return made


def listed(served: Served, token: str, **params: Any) -> list[dict[str, Any]]:
    """Every page of the listing, following the cursor."""
    sessions: list[dict[str, Any]] = []
    with client(token) as http:
        while True:
            r = http.get(f"{served.url}/v1/sessions", params=params)
            assert r.status_code == 200, r.text
            body = r.json()
            sessions.extend(body["sessions"])
            if body["cursor"] is None:
                return sessions
            params = {**params, "cursor": body["cursor"]}


def ids(sessions: list[dict[str, Any]]) -> set[str]:
    return {s["sessionId"] for s in sessions}


def test_a_caller_lists_only_their_own_sessions(
    served: Served, world: dict[str, list[str]]
) -> None:
    alice = world["alice_idle"] + world["alice_parked"]
    assert ids(listed(served, ALICE)) == set(alice)
    assert ids(listed(served, ALICE, principal=bearer_principal_id(ALICE))) == set(alice)


def test_naming_another_principal_is_forbidden_to_a_non_admin(
    served: Served, world: dict[str, list[str]]
) -> None:
    with client(ALICE) as http:
        r = http.get(f"{served.url}/v1/sessions", params={"principal": bearer_principal_id(BOB)})
    assert r.status_code == 403
    body = r.json()
    assert (body["ok"], body["error"]) == (False, "forbidden")
    assert world["bob_idle"][0] not in r.text


def test_an_admin_lists_everyone_or_one_principal(
    served: Served, world: dict[str, list[str]]
) -> None:
    everyone = set(world["alice_idle"] + world["alice_parked"] + world["bob_idle"])
    assert ids(listed(served, ADMIN)) == everyone
    assert ids(listed(served, ADMIN, principal=bearer_principal_id(BOB))) == set(world["bob_idle"])


def test_status_filters_by_the_folded_status(served: Served, world: dict[str, list[str]]) -> None:
    parked = listed(served, ALICE, status="awaiting_approval")
    assert ids(parked) == set(world["alice_parked"])
    assert {s["status"] for s in parked} == {"awaiting_approval"}
    both = listed(served, ALICE, status="idle,awaiting_approval")
    assert ids(both) == set(world["alice_idle"] + world["alice_parked"])
    assert listed(served, ALICE, status="failed") == []


def test_a_filtered_listing_pages_every_match_once(
    served: Served, world: dict[str, list[str]]
) -> None:
    pages = listed(served, ADMIN, status="idle", limit=1)
    assert [s["sessionId"] for s in pages].count(world["alice_idle"][0]) == 1
    assert ids(pages) == set(world["alice_idle"] + world["bob_idle"])
    assert len(pages) == 3


def test_started_after_and_before_bound_the_creation_time(
    served: Served, world: dict[str, list[str]]
) -> None:
    newest_first = listed(served, ADMIN)
    times = {s["sessionId"]: s["createdAt"] for s in newest_first}
    second, last = world["alice_parked"][0], world["bob_idle"][0]
    window = listed(served, ADMIN, startedAfter=times[second], startedBefore=times[last])
    assert ids(window) == {second, world["alice_idle"][1]}
    assert ids(listed(served, ADMIN, startedAfter=times[last])) == {last}
    assert [s["sessionId"] for s in window] == [
        s["sessionId"] for s in newest_first if s["sessionId"] in ids(window)
    ]


def test_min_cost_keeps_the_sessions_that_cost_at_least_that(
    served: Served, world: dict[str, list[str]]
) -> None:
    costs = {s["sessionId"]: s["costUsd"] for s in listed(served, ADMIN)}
    # The finished turns cost something; the parked one has not been charged yet.
    assert costs[world["alice_parked"][0]] == 0
    assert all(costs[sid] > 0 for sid in world["alice_idle"] + world["bob_idle"]), costs
    kept = listed(served, ADMIN, minCost=0.001)
    assert ids(kept) == set(world["alice_idle"] + world["bob_idle"])
    assert ids(listed(served, ADMIN, minCost=0)) == set(costs)
    assert listed(served, ADMIN, minCost=1_000_000) == []


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"status": "sleeping"}, "status"),
        ({"minCost": "-1"}, "minCost"),
        ({"minCost": "lots"}, "minCost"),
        ({"minCost": "nan"}, "minCost"),
        ({"startedAfter": "yesterday"}, "startedAfter"),
        ({"startedBefore": "2026-13-01T00:00:00Z"}, "startedBefore"),
        ({"principal": ""}, "principal"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(
    served: Served, params: dict[str, str], names: str
) -> None:
    with client(ADMIN) as http:
        r = http.get(f"{served.url}/v1/sessions", params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert (body["ok"], body["error"]) == (False, "bad_request")
    assert names in body["message"]


def test_the_openapi_document_declares_the_filters(served: Served) -> None:
    document = httpx.get(f"{served.root_url}/v1/openapi.json", timeout=30).json()
    operation = next(
        op["get"] for path, op in document["paths"].items() if path.endswith("/v1/sessions")
    )
    declared = {p["name"] for p in operation["parameters"]}
    assert {"status", "principal", "minCost", "startedAfter", "startedBefore"} <= declared


def test_the_clients_listing_passes_the_filters(
    served: Served, world: dict[str, list[str]]
) -> None:
    times = {s["sessionId"]: s["createdAt"] for s in listed(served, ADMIN)}
    after = datetime.fromisoformat(times[world["alice_parked"][0]])
    with Client(served.url, token=ADMIN) as admin:
        found = list(
            admin.sessions(
                page_size=1,
                status=["idle"],
                principal=bearer_principal_id(ALICE),
                min_cost=0.001,
                started_after=after,
            )
        )
    assert [s.session_id for s in found] == [world["alice_idle"][1]]
    assert found[0].cost_usd is not None and found[0].cost_usd > 0
    with Client(served.url, token=BOB) as bob, pytest.raises(ApiError) as refused:
        list(bob.sessions(principal=bearer_principal_id(ALICE)))
    assert refused.value.status == 403


async def test_the_async_client_lists_with_the_same_filters(
    served: Served, world: dict[str, list[str]]
) -> None:
    async with AsyncClient(served.url, token=ALICE) as alice:
        parked = [s.session_id async for s in alice.sessions(status="awaiting_approval")]
    assert parked == world["alice_parked"]
