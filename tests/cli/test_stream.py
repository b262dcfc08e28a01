"""`agentkit stream` against a real `agentkit serve`: responses that end at a small window are
resumed from the next index, nothing is printed twice, and it stops once the session settles."""

from __future__ import annotations

import io
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from agentkit.cli import main
from agentkit.cli.stream import StreamFollower
from tests.fixtures.http_server import Served


def start(served: Served, message: str) -> dict[str, Any]:
    r = httpx.post(f"{served.url}/v1/session", json={"message": message}, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def recorded(served: Served, session_id: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{served.url}/v1/session/{session_id}/events", timeout=30)
    return [json.loads(line) for line in r.text.splitlines() if line]


def printed(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line]


def test_a_turn_longer_than_the_window_is_printed_once_across_responses(
    shared_server: Served,
) -> None:
    sid = start(shared_server, "Run the slow job.")["sessionId"]  # it waits for its gate
    out = io.StringIO()
    with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as client:
        follower = StreamFollower(
            client, shared_server.url, sid, start=0, window=0.3, follow=False, retries=3, out=out
        )
        outcome: list[int] = []
        runner = threading.Thread(target=lambda: outcome.append(follower.run()))
        runner.start()
        # Open the job's gate only once the server has ended three responses mid-turn.
        deadline = time.monotonic() + 60
        while follower.responses < 4 and runner.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        shared_server.open_gate(sid)
        runner.join(60)
        assert outcome == [0]
    events = printed(out.getvalue())
    assert follower.responses > 3  # the server ended responses before the turn did
    assert [e["index"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "session.waiting"
    assert events == recorded(shared_server, sid)


def test_the_command_prints_ndjson_and_stops_when_the_session_settles(
    shared_server: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = start(shared_server, "Run the slow job.")["sessionId"]
    shared_server.open_gate(sid)  # the job may end whenever it runs
    code = main(["stream", "--url", shared_server.url, "--session", sid, "--window", "0.4"])
    assert code == 0
    events = printed(capsys.readouterr().out)
    assert [e["index"] for e in events] == list(range(len(events)))
    assert events == recorded(shared_server, sid)


def test_a_replay_does_not_stop_at_an_earlier_turns_end(
    shared_server: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    accepted = start(shared_server, "Hello there.")
    sid = accepted["sessionId"]
    main(["stream", "--url", shared_server.url, "--session", sid])
    capsys.readouterr()
    r = httpx.post(
        f"{shared_server.url}/v1/session/{sid}",
        json={"continuationToken": accepted["continuationToken"], "message": "And again."},
        timeout=30,
    )
    assert r.status_code == 200, r.text

    assert main(["stream", "--url", shared_server.url, "--session", sid]) == 0
    events = printed(capsys.readouterr().out)
    assert [e["type"] for e in events].count("session.waiting") == 2
    assert events == recorded(shared_server, sid)


def test_start_skips_the_events_before_it(
    shared_server: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = start(shared_server, "Hello there.")["sessionId"]
    main(["stream", "--url", shared_server.url, "--session", sid])
    total = len(printed(capsys.readouterr().out))
    assert main(["stream", "--url", shared_server.url, "--session", sid, "--start", "3"]) == 0
    assert [e["index"] for e in printed(capsys.readouterr().out)] == list(range(3, total))


def test_an_unknown_session_is_a_clear_error(
    shared_server: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["stream", "--url", shared_server.url, "--session", "ses_" + "n" * 22])
    assert code == 1
    assert "refused the stream: 404" in capsys.readouterr().err


def test_a_wrong_bearer_token_is_refused(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    served = serve("--bearer-token", "right-token")
    r = httpx.post(
        f"{served.url}/v1/session",
        json={"message": "hi"},
        headers={"authorization": "Bearer right-token"},
        timeout=30,
    )
    sid = r.json()["sessionId"]
    args = ["stream", "--url", served.url, "--session", sid]
    assert main([*args, "--token", "wrong-token"]) == 1
    assert "401" in capsys.readouterr().err
    assert main([*args, "--token", "right-token"]) == 0
    assert printed(capsys.readouterr().out)[-1]["type"] == "session.waiting"


def test_follow_keeps_printing_the_next_turns(shared_server: Served) -> None:
    accepted = start(shared_server, "Hello there.")
    sid = accepted["sessionId"]
    command = [sys.executable, "-c", "import sys; from agentkit.cli import main; sys.exit(main())"]
    args = ["stream", "--url", shared_server.url, "--session", sid, "--follow", "--window", "0.3"]
    proc = subprocess.Popen([*command, *args], stdout=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def until_waiting() -> list[dict[str, Any]]:
        seen = []
        while True:
            event = json.loads(lines.get(timeout=30))
            seen.append(event)
            if event["type"] == "session.waiting":
                return seen

    try:
        first = until_waiting()
        r = httpx.post(
            f"{shared_server.url}/v1/session/{sid}",
            json={"continuationToken": accepted["continuationToken"], "message": "Again."},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        second = until_waiting()
        assert proc.poll() is None  # still following
    finally:
        proc.kill()
        proc.wait(timeout=10)
    indexes = [e["index"] for e in first + second]
    assert indexes == list(range(len(indexes)))
    assert (first + second) == recorded(shared_server, sid)


def test_starting_past_the_end_of_a_settled_session_stops_at_once(shared_server: Served) -> None:
    sid = start(shared_server, "What is the weather in Paris?")["sessionId"]
    with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as client:
        seen = StreamFollower(
            client,
            shared_server.url,
            sid,
            start=0,
            window=None,
            follow=False,
            retries=3,
            out=io.StringIO(),
        )
        assert seen.run() == 0  # to `session.waiting`
        after = len(recorded(shared_server, sid))
        out = io.StringIO()
        follower = StreamFollower(
            client,
            shared_server.url,
            sid,
            start=after,
            window=None,
            follow=False,
            retries=3,
            out=out,
        )
        outcome: list[int] = []
        runner = threading.Thread(target=lambda: outcome.append(follower.run()), daemon=True)
        runner.start()
        runner.join(30)  # a follower that waits for an event that never comes is still here
        assert outcome == [0] and out.getvalue() == ""
