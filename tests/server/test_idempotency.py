"""A lost response never strands a conversation: the write routes take `Idempotency-Key`,
and a retry through a connection whose first answer was dropped gets that answer back.

Over HTTP against `agentkit serve` (file store), through a proxy that forwards each request
and drops the response, as a dropped connection, a client timeout or a gateway limit does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.fixtures.http_server import SLUG, Served
from tests.server.cutting_proxy import CuttingProxy, HangUpProxy
from tests.server.helpers import Event, dump, of_type, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="sends writes through a proxy to a served agent")


@pytest.fixture
def proxy(shared_server: Served) -> Iterator[CuttingProxy]:
    cutting = CuttingProxy(shared_server.port)
    cutting.start()
    yield cutting
    cutting.stop()


def proxied(proxy: CuttingProxy) -> str:
    return f"{proxy.url}/{SLUG}"


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def lost(client: httpx.Client, url: str, body: dict[str, object], headers: dict[str, str]) -> None:
    """Send a write whose response the proxy drops."""
    with pytest.raises(httpx.TransportError):
        client.post(url, json=body, headers=headers)


def direct_call(event: Event) -> bool:
    """A direct call (one outside any turn) was requested."""
    return bool(event["type"] == "actions.requested" and not event.get("turnId"))


def messages(client: httpx.Client, url: str, sid: str) -> list[str]:
    return [e["data"]["message"] for e in dump(client, url, sid) if e["type"] == "message.received"]


def test_a_follow_up_whose_response_was_lost_is_answered_again_on_retry(
    shared_server: Served, proxy: CuttingProxy
) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        started = start_session(client, url, "weather in Porto")
        sid, token = started["sessionId"], started["continuationToken"]
        read_stream(client, url, sid, until=turn_ends())
        headers = key()
        body = {"continuationToken": token, "message": "and in Lisbon?"}

        lost(client, f"{proxied(proxy)}/v1/session/{sid}", body, headers)
        assert proxy.cut == 1
        # The retry carries the only token the caller has: the one before the rotation.
        retried = client.post(f"{url}/v1/session/{sid}", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        answer = retried.json()
        assert answer["sessionId"] == sid
        assert answer["continuationToken"] != token

        read_stream(client, url, sid, until=turn_ends(2))
        assert messages(client, url, sid) == ["weather in Porto", "and in Lisbon?"]
        # The token of the replayed answer is the live one.
        onward = client.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": answer["continuationToken"], "message": "thanks"},
        )
        assert onward.status_code == 200, onward.text
        assert "idempotent-replayed" not in onward.headers


def test_a_replay_names_the_turn_the_first_request_started(shared_server: Served) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        started = start_session(client, url, "weather in Porto")
        sid = started["sessionId"]
        read_stream(client, url, sid, until=turn_ends())
        headers = key()
        body = {"continuationToken": started["continuationToken"], "message": "again"}
        first = client.post(f"{url}/v1/session/{sid}", json=body, headers=headers)
        second = client.post(f"{url}/v1/session/{sid}", json=body, headers=headers)
        assert first.status_code == second.status_code == 200, second.text
        assert second.json() == first.json()
        assert second.json()["turnId"] == first.json()["turnId"]


def test_a_lost_session_start_is_one_session(shared_server: Served, proxy: CuttingProxy) -> None:
    url = shared_server.url
    headers = key()
    body = {"message": f"weather in Oslo {uuid.uuid4()}"}
    with httpx.Client(timeout=30) as client:
        lost(client, f"{proxied(proxy)}/v1/session", body, headers)
        retried = client.post(f"{url}/v1/session", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        sid = retried.json()["sessionId"]
        listed = client.get(f"{url}/v1/sessions", params={"limit": 200}).json()["sessions"]
        assert [s["sessionId"] for s in listed].count(sid) == 1
        assert messages(client, url, sid) == [body["message"]]
        same_message = [
            s for s in listed if messages(client, url, s["sessionId"]) == [body["message"]]
        ]
        assert len(same_message) == 1


def test_the_same_key_with_another_body_is_a_422(shared_server: Served) -> None:
    url = shared_server.url
    headers = key()
    with httpx.Client(timeout=30) as client:
        first = client.post(f"{url}/v1/session", json={"message": "one"}, headers=headers)
        assert first.status_code == 200, first.text
        reused = client.post(f"{url}/v1/session", json={"message": "two"}, headers=headers)
        assert reused.status_code == 422, reused.text
        assert reused.json()["ok"] is False
        assert reused.json()["error"] == "idempotency_key_reused"


def test_a_malformed_key_is_a_400(shared_server: Served) -> None:
    with httpx.Client(timeout=30) as client:
        refused = client.post(
            f"{shared_server.url}/v1/session",
            json={"message": "hi"},
            headers={"Idempotency-Key": "k" * 256},
        )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_idempotency_key"


def test_a_lost_approval_is_decided_once(shared_server: Served, proxy: CuttingProxy) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        sid = start_session(client, url, "wipe the notes folder")["sessionId"]
        read_stream(client, url, sid, until=of_type("action.approval_requested"))
        call_id = client.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"][0]["callId"]
        path = f"/v1/session/{sid}/approvals/{call_id}"
        headers = key()
        lost(client, f"{proxied(proxy)}{path}", {"decision": "approve"}, headers)
        retried = client.post(f"{url}{path}", json={"decision": "approve"}, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        assert (retried.json()["callId"], retried.json()["decision"]) == (call_id, "approve")
        read_stream(client, url, sid, until=turn_ends())
        resolved = [e for e in dump(client, url, sid) if e["type"] == "action.approval_resolved"]
        assert len(resolved) == 1


def test_a_lost_direct_tool_call_runs_once(shared_server: Served, proxy: CuttingProxy) -> None:
    url = shared_server.url
    headers = key()
    body = {"input": {"city": "Porto"}}
    with httpx.Client(timeout=30) as client:
        lost(client, f"{proxied(proxy)}/v1/tools/get_weather", body, headers)
        retried = client.post(f"{url}/v1/tools/get_weather", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        fresh = client.post(f"{url}/v1/tools/get_weather", json=body, headers=key())
        assert fresh.json()["callId"] != retried.json()["callId"]
        assert retried.json()["result"] == {"city": "Porto", "tempC": 21}


def test_a_lost_stop_is_answered_again(shared_server: Served, proxy: CuttingProxy) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        sid = start_session(client, url, "run the slow job")["sessionId"]
        read_stream(client, url, sid, until=of_type("actions.requested"))
        headers = key()
        with pytest.raises(httpx.TransportError):
            client.post(f"{proxied(proxy)}/v1/session/{sid}/stop", headers=headers)
        retried = client.post(f"{url}/v1/session/{sid}/stop", headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        assert retried.json()["stopped"] is True
        read_stream(client, url, sid, until=turn_ends())


def test_a_write_whose_client_hung_up_mid_request_is_answered_once(
    shared_server: Served,
) -> None:
    # The client sends a keyed write and hangs up before any answer, while the write still
    # runs (a direct call of the slow job in a session, held by its gate). The retry with
    # the same key, sent while the first attempt still runs, gets that attempt's answer.
    url = shared_server.url
    hang_up = HangUpProxy(shared_server.port)
    hang_up.start()
    try:
        with httpx.Client(timeout=30) as client:
            started = start_session(client, url, "weather in Porto")
            sid = started["sessionId"]
            read_stream(client, url, sid, until=turn_ends())
            next_index = len(dump(client, url, sid))

            def at_work() -> None:  # the call is on the stream: the write is running
                with httpx.Client(timeout=30) as watcher:
                    read_stream(watcher, url, sid, start=next_index, until=direct_call)

            hang_up.at_work = at_work
            headers = key()
            body = {"input": {"label": "once"}, "sessionId": sid}
            path = f"{proxied(hang_up)}/v1/tools/slow_job"
            lost(client, path, body, headers)
            assert hang_up.hung_up.is_set()
            hang_up.hanging_up = False
            with ThreadPoolExecutor(1) as pool:
                retry = pool.submit(client.post, path, json=body, headers=headers)
                assert hang_up.forwarded.wait(10)
                shared_server.open_gate(sid)
                retried = retry.result(30)
            assert retried.status_code == 200, retried.text
            assert retried.headers["idempotent-replayed"] == "true"
            assert retried.json()["result"] == {"done": "once"}
            # One direct call on the session's stream (the weather turn's call aside).
            direct = [
                e
                for e in dump(client, url, sid)
                if e["type"] == "action.result" and not e.get("turnId")
            ]
            assert [e["data"]["callId"] for e in direct] == [retried.json()["callId"]]
    finally:
        hang_up.stop()
