"""`kill -9` of `agentkit serve` after a follow-up rotated the token but before its answer
was kept for a replay: a retry with the same `Idempotency-Key` and the token from before
the rotation gets the original answer, not `409 stale_token`.

The crash comes from the test-only `AGENTKIT_TEST_CRASH_AT` hook (`engine/crash_points.py`):
the server kills itself with SIGKILL at the named point, the first time it gets there.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from agentkit.engine.crash_points import CRASH_ENV
from tests.fixtures.http_server import ServeFactory
from tests.server.helpers import TURN_END, dump, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="kills agentkit serve mid-request and restarts it")


def test_a_follow_up_killed_before_its_answer_was_kept_is_answered_on_retry(
    serve: ServeFactory,
) -> None:
    served = serve(env={CRASH_ENV: "idempotent-answer-unrecorded"})
    with httpx.Client(timeout=30) as client:
        started = start_session(client, served.url, "weather in Porto")
        sid, token = started["sessionId"], started["continuationToken"]
        read_stream(client, served.url, sid, until=turn_ends())
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        body = {"continuationToken": token, "message": "and in Lisbon?"}

        with pytest.raises(httpx.TransportError):  # the server died mid-request
            client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert served.proc is not None and served.proc.wait(10) == -9
        served.env.pop(CRASH_ENV)
        served.restart()

        retried = client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        answer = retried.json()
        events = dump(client, served.url, sid)
        received = [e for e in events if e["type"] == "message.received"]
        assert [e["data"]["message"] for e in received] == ["weather in Porto", "and in Lisbon?"]
        assert answer["sessionId"] == sid
        assert answer["turnId"] == received[-1]["turnId"]
        assert answer["continuationToken"] != token

        # The new token is the live one; the old one is spent.
        read_stream(client, served.url, sid, until=turn_ends(2))
        onward = client.post(
            f"{served.url}/v1/session/{sid}",
            json={"continuationToken": answer["continuationToken"], "message": "thanks"},
        )
        assert onward.status_code == 200, onward.text
        stale = client.post(
            f"{served.url}/v1/session/{sid}", json={"continuationToken": token, "message": "x"}
        )
        assert stale.status_code == 409


def sessions_with(client: httpx.Client, url: str, message: str) -> list[str]:
    listed = client.get(f"{url}/v1/sessions", params={"limit": 200}).json()["sessions"]
    found = []
    for session in listed:
        events = dump(client, url, session["sessionId"])
        if [e["data"]["message"] for e in events if e["type"] == "message.received"] == [message]:
            found.append(session["sessionId"])
    return found


@pytest.mark.parametrize("point", ["idempotent-answer-unrecorded", "idempotent-answer-unsent"])
def test_a_new_session_killed_mid_request_is_one_session_on_retry(
    serve: ServeFactory, point: str
) -> None:
    # unrecorded: killed after the session and its message were recorded, before the
    # answer was kept as done; unsent: after it was kept, before the response went out.
    served = serve(env={CRASH_ENV: point})
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"message": f"open a ticket {uuid.uuid4()}"}
    with httpx.Client(timeout=30) as client:
        with pytest.raises(httpx.TransportError):
            client.post(f"{served.url}/v1/session", json=body, headers=headers)
        assert served.proc is not None and served.proc.wait(10) == -9
        served.env.pop(CRASH_ENV)
        served.restart()

        retried = client.post(f"{served.url}/v1/session", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        answer = retried.json()
        assert sessions_with(client, served.url, body["message"]) == [answer["sessionId"]]
        sid = answer["sessionId"]
        [received] = [e for e in dump(client, served.url, sid) if e["type"] == "message.received"]
        assert answer["turnId"] == received["turnId"]
        # The turn runs (recovery dispatches it if the crash came first), and the replayed
        # token is the live one.
        read_stream(client, served.url, sid, until=turn_ends())
        onward = client.post(
            f"{served.url}/v1/session/{sid}",
            json={"continuationToken": answer["continuationToken"], "message": "thanks"},
        )
        assert onward.status_code == 200, onward.text


def test_a_follow_up_killed_after_its_answer_was_kept_is_replayed(serve: ServeFactory) -> None:
    served = serve(env={CRASH_ENV: "idempotent-answer-unsent"})
    with httpx.Client(timeout=30) as client:
        # The crash point is met by the first keyed write only: start without a key.
        started = start_session(client, served.url, "weather in Porto")
        sid, token = started["sessionId"], started["continuationToken"]
        read_stream(client, served.url, sid, until=turn_ends())
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        body = {"continuationToken": token, "message": "and in Lisbon?"}
        with pytest.raises(httpx.TransportError):
            client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert served.proc is not None and served.proc.wait(10) == -9
        served.env.pop(CRASH_ENV)
        served.restart()

        retried = client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        received = [e for e in dump(client, served.url, sid) if e["type"] == "message.received"]
        assert [e["data"]["message"] for e in received] == ["weather in Porto", "and in Lisbon?"]
        assert retried.json()["turnId"] == received[-1]["turnId"]


def test_a_queued_follow_up_killed_before_its_answer_was_kept_is_replayed(
    serve: ServeFactory,
) -> None:
    # `onBusy: "queue"` behind a running turn: killed after the message was queued and the
    # token rotated, before the answer was kept as done. The retry gets the turn id the
    # queued message takes when it runs.
    served = serve(env={CRASH_ENV: "idempotent-answer-unrecorded"})
    with httpx.Client(timeout=30) as client:
        started = start_session(client, served.url, "run the slow job")
        sid, token = started["sessionId"], started["continuationToken"]
        # The slow job is requested and waits for its gate: the turn is running. (A call
        # that needs no approval records no `action.started`, so waiting on one only ended
        # with the stream's 20 s window.)
        read_stream(client, served.url, sid, until=lambda e: e["type"] == "actions.requested")
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        body = {"continuationToken": token, "message": "and then?", "onBusy": "queue"}
        with pytest.raises(httpx.TransportError):
            client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert served.proc is not None and served.proc.wait(10) == -9
        served.env.pop(CRASH_ENV)
        served.open_gate(sid)
        served.restart()

        retried = client.post(f"{served.url}/v1/session/{sid}", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        answer = retried.json()
        assert answer["continuationToken"] != token
        read_stream(
            client,
            served.url,
            sid,
            until=lambda e: e["type"] in TURN_END and e.get("turnId") == answer["turnId"],
        )
        events = dump(client, served.url, sid)
        received = [e for e in events if e["type"] == "message.received"]
        assert [e["data"]["message"] for e in received] == ["run the slow job", "and then?"], (
            "\n".join(f"{e['type']} {e.get('turnId')} {e['data']}" for e in events)
        )
        assert received[-1]["turnId"] == answer["turnId"]
