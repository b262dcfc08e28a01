"""The auth chain over the wire: bearer principals never reach each other's sessions, and
the layout flags (single mode, no docs, no playground) change what is mounted."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import Served, serve_in
from tests.server.helpers import of_type, read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="starts agentkit serve under several auth policies")

ALICE, BOB = "alice-secret-token", "bob-secret-token"


@pytest.fixture(scope="module")
def bearer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("bearer")
    tokens = base / "tokens.txt"
    tokens.write_text(f"{BOB}\n")  # one token by flag, one from a file
    served = serve_in(
        base,
        "--mode", "single", "--no-docs", "--no-playground",
        "--bearer-token", ALICE, "--tokens-file", str(tokens),
    )  # fmt: skip
    yield served
    served.stop()


@pytest.fixture
def alice() -> Iterator[httpx.Client]:
    with httpx.Client(headers={"authorization": f"Bearer {ALICE}"}, timeout=30) as c:
        yield c


@pytest.fixture
def bob() -> Iterator[httpx.Client]:
    with httpx.Client(headers={"authorization": f"Bearer {BOB}"}, timeout=30) as c:
        yield c


def test_bearer_principals_are_isolated(
    bearer_server: Served, alice: httpx.Client, bob: httpx.Client
) -> None:
    url = bearer_server.url
    started = alice.post(f"{url}/v1/session", json={"message": "wipe the notes folder"})
    assert started.status_code == 200, started.text
    sid, token = started.json()["sessionId"], started.json()["continuationToken"]
    assert started.json()["playgroundUrl"] is None  # --no-playground
    read_stream(alice, url, sid, until=of_type("action.approval_requested"))
    call_id = alice.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"][0]["callId"]

    refused = {
        "stream": bob.get(f"{url}/v1/session/{sid}/stream", params={"window": 1}),
        "events": bob.get(f"{url}/v1/session/{sid}/events"),
        "follow-up": bob.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "hi"}
        ),
        "approvals": bob.get(f"{url}/v1/session/{sid}/approvals"),
        "approve": bob.post(
            f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "approve"}
        ),
        "stop": bob.post(f"{url}/v1/session/{sid}/stop"),
        "tool": bob.post(
            f"{url}/v1/tools/get_weather", json={"input": {"city": "x"}, "sessionId": sid}
        ),
    }
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 403)
    assert all(r.json()["ok"] is False for r in refused.values())
    assert sid not in [s["sessionId"] for s in bob.get(f"{url}/v1/sessions").json()["sessions"]]

    listed = alice.get(f"{url}/v1/sessions").json()["sessions"]
    assert [s["principal"] for s in listed if s["sessionId"] == sid] == [bearer_principal_id(ALICE)]
    ok = alice.post(f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "approve"})
    assert ok.status_code == 200
    assert read_stream(alice, url, sid, until=turn_ends())[-1]["type"] == "turn.completed"


def test_no_or_wrong_token_is_401(bearer_server: Served) -> None:
    url = bearer_server.url
    missing = httpx.post(f"{url}/v1/session", json={"message": "hi"})
    wrong = httpx.post(
        f"{url}/v1/session", json={"message": "hi"}, headers={"authorization": "Bearer nope"}
    )
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.json()["error"] == wrong.json()["error"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"


def test_health_and_meta_need_no_auth(bearer_server: Served) -> None:
    assert httpx.get(f"{bearer_server.url}/v1/health").status_code == 200
    meta = httpx.get(f"{bearer_server.url}/v1/meta").json()
    assert meta["basePath"] == "" and meta["playground"] is False and meta["docs"] is False


def test_info_needs_auth(bearer_server: Served, alice: httpx.Client) -> None:
    assert httpx.get(f"{bearer_server.url}/v1/info").status_code == 401
    assert alice.get(f"{bearer_server.url}/v1/info").status_code == 200


def test_flags_remove_docs_and_index(bearer_server: Served) -> None:
    root = bearer_server.root_url
    assert httpx.get(f"{root}/docs").status_code == 404
    assert httpx.get(f"{root}/v1/agents").status_code == 404
    home = httpx.get(f"{root}/")  # the agent's own page of links, not the playground
    assert home.status_code == 200 and "/v1/info" in home.text and "playground" not in home.text
    # the API docs moved out of /docs and stay available
    assert httpx.get(f"{root}/v1/openapi.json").status_code == 200
