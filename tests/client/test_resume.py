"""Resumption: the events a client yields equal the recorded ones, each index once, when the
connection is cut every few events and when the server is killed and restarted mid-stream."""

from __future__ import annotations

import threading

import pytest

from agentkit.client import Client
from agentkit.events import Event, EventType
from tests.client.proxy import CuttingProxy
from tests.fixtures.http_server import Served, ServeFactory


def text_of(events: list[Event]) -> str:
    return "".join(e.data["text"] for e in events if e.type == EventType.MESSAGE_APPENDED)


def assert_same_as_recorded(seen: list[Event], url: str, session_id: str) -> None:
    with Client(url) as direct:
        recorded = direct.dump(session_id)
    assert [e.index for e in seen] == list(range(len(seen)))  # no index twice, none missing
    assert seen == recorded[: len(seen)]
    assert text_of(seen) == text_of(recorded[: len(seen)])


def test_a_proxy_that_cuts_every_few_events(shared_server: Served) -> None:
    proxy = CuttingProxy(shared_server.port, every=3)
    try:
        with Client(f"{proxy.url}/helpdesk", retries=10, backoff=0.01) as client:
            session = client.start("What is the weather in Paris?")
            seen = list(session.events(until_settled=True))
            assert seen[-1].type == EventType.SESSION_WAITING
            session.send("wipe the notes folder")
            for event in session.events(start_index=seen[-1].index + 1):
                seen.append(event)
                if event.type == EventType.ACTION_APPROVAL_REQUESTED:
                    session.approve(event.data["callId"])
                if event.type == EventType.TURN_COMPLETED:
                    break
        assert proxy.cuts >= 4  # many responses were cut mid-line
        assert "wiped" in seen[-1].data["result"]
        assert text_of(seen)
        assert_same_as_recorded(seen, shared_server.url, session.id)
    finally:
        proxy.close()


@pytest.mark.slow(reason="kills and restarts the server mid-stream")
def test_the_server_killed_and_restarted_mid_stream(serve: ServeFactory) -> None:
    served = serve(env={"SLOW_JOB_SECONDS": "120"})
    url = served.url
    # A restart takes seconds on a busy machine: tolerate many failed reconnects.
    with Client(url, stream_retries=400, backoff=0.05, backoff_max=0.5) as client:
        session = client.start("run the slow job")
        seen: list[Event] = []
        events = session.events()
        for event in events:
            seen.append(event)
            if event.type == EventType.ACTIONS_REQUESTED:
                break
        served.kill9()  # mid-turn, with the stream response open
        restarted = threading.Thread(target=served.start)  # same port
        restarted.start()
        try:
            for event in events:  # reconnects while the server is down, then resumes
                seen.append(event)
                if event.type == EventType.TURN_FAILED:
                    break
        finally:
            restarted.join()
        assert "process" in seen[-1].data["error"]  # the restart's recovery ended the turn
        session.send("What is the weather in Oslo?")  # the token survived the restart
        for event in events:
            seen.append(event)
            if event.type == EventType.TURN_COMPLETED:
                break
        assert "Oslo" in seen[-1].data["result"]
    assert client.stream_responses >= 2
    assert_same_as_recorded(seen, url, session.id)
