"""Restarts: after `kill -9` mid-turn (or a graceful stop) the streams replay from disk,
the turn that was running ends as `turn.failed`, parked approvals stay resolvable, and
sessions take follow-ups again."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.fixtures.http_server import ServeFactory
from tests.server.helpers import dump, of_type, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="kills and restarts agentkit serve mid-turn")
LONG = {"SLOW_JOB_SECONDS": "120"}


def test_kill_9_mid_turn_then_restart(serve: ServeFactory) -> None:
    served = serve(env=LONG)
    with httpx.Client(timeout=30) as client:
        running = start_session(client, served.url, "run the slow job")
        parked = start_session(client, served.url, "wipe the notes folder")
        read_stream(client, served.url, running["sessionId"], until=of_type("actions.requested"))
        read_stream(
            client, served.url, parked["sessionId"], until=of_type("action.approval_requested")
        )
        before = dump(client, served.url, running["sessionId"])

        served.kill9()
        served.restart()
        url = served.url

        replay = read_stream(client, url, running["sessionId"], until=turn_ends())
        assert replay[: len(before)] == before
        assert [e["index"] for e in replay] == list(range(len(replay)))
        assert replay[-1]["type"] == "turn.failed"
        assert "process" in replay[-1]["data"]["error"]

        pending = client.get(f"{url}/v1/session/{parked['sessionId']}/approvals").json()
        [approval] = pending["approvals"]
        resolved = client.post(
            f"{url}/v1/session/{parked['sessionId']}/approvals/{approval['callId']}",
            json={"decision": "approve"},
        )
        assert resolved.status_code == 200, resolved.text
        done = read_stream(client, url, parked["sessionId"], until=turn_ends())
        assert done[-1]["type"] == "turn.completed"

        again = client.post(
            f"{url}/v1/session/{running['sessionId']}",
            json={"continuationToken": running["continuationToken"], "message": "weather?"},
        )
        assert again.status_code == 200, again.text
        after = read_stream(client, url, running["sessionId"], start=len(replay), until=turn_ends())
        assert after[-1]["type"] == "turn.completed"


def test_graceful_stop_ends_open_streams_and_leaves_the_turn_to_recovery(
    serve: ServeFactory,
) -> None:
    served = serve(env=LONG)
    with httpx.Client(timeout=30) as client:
        body = start_session(client, served.url, "run the slow job")
        sid = body["sessionId"]
        read_stream(client, served.url, sid, until=of_type("actions.requested"))
        opened, ended = threading.Event(), threading.Event()

        def listen() -> None:
            url = f"{served.url}/v1/session/{sid}/stream"
            with client.stream("GET", url, params={"window": 60}) as response:
                opened.set()
                for _ in response.iter_lines():
                    pass
            ended.set()

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        assert opened.wait(10)
        started = time.monotonic()
        assert served.stop() == 0
        assert time.monotonic() - started < 10
        assert ended.wait(5), "an open stream must end when the server stops"

        served.restart()
        end = read_stream(client, served.url, sid, until=turn_ends())[-1]
        assert end["type"] == "turn.failed"
