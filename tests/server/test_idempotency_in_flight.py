"""A keyed write whose first attempt is still running when its retry comes: the retry that
outlasts its wait is told so (`409 idempotency_key_in_use` with `Retry-After`), and a
server stopped while the attempt runs lets it finish and keep its answer, so the retry
after the restart replays it.

Over HTTP against `agentkit serve`. The first attempt is a direct call of the slow job in a
session, sent through a proxy that hangs up once the call is on the stream; the job ends
when the test opens its gate (a file), so nothing races a clock.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentkit.engine.idempotency import WAIT_ENV
from tests.fixtures.http_server import SLUG, Served, ServeFactory
from tests.server.cutting_proxy import HangUpProxy
from tests.server.helpers import Event, dump, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="serves an agent and sends writes through a proxy")


@pytest.fixture
def hang_up(serve: ServeFactory) -> Iterator[Any]:
    """`hang_up(served)`: a proxy to `served` that drops the client once the request is
    through, stopped at teardown."""
    proxies: list[HangUpProxy] = []

    def factory(served: Served) -> HangUpProxy:
        proxy = HangUpProxy(served.port)
        proxy.start()
        proxies.append(proxy)
        return proxy

    yield factory
    for proxy in proxies:
        proxy.stop()


def direct_call_started(client: httpx.Client, url: str, sid: str, start: int) -> list[Event]:
    """Read the stream from `start` until the direct call (no turn) is requested."""
    seen = read_stream(
        client,
        url,
        sid,
        start=start,
        until=lambda e: e["type"] == "actions.requested" and not e.get("turnId"),
    )
    assert seen and seen[-1]["type"] == "actions.requested", seen
    return seen


def direct_results(client: httpx.Client, url: str, sid: str) -> list[Event]:
    return [
        e for e in dump(client, url, sid) if e["type"] == "action.result" and not e.get("turnId")
    ]


def send_and_hang_up(
    client: httpx.Client,
    served: Served,
    proxy: HangUpProxy,
    sid: str,
    headers: dict[str, str],
    next_index: int,
) -> None:
    """Start the slow job on `sid` with `headers` through `proxy`, which hangs up on it
    once the call is on the stream from `next_index` (the write is running)."""

    def at_work() -> None:
        with httpx.Client(timeout=30) as watcher:
            direct_call_started(watcher, served.url, sid, next_index)

    proxy.at_work = at_work
    with pytest.raises(httpx.TransportError):
        client.post(
            f"{proxy.url}/{SLUG}/v1/tools/slow_job",
            json={"input": {"label": "once"}, "sessionId": sid},
            headers=headers,
        )
    assert proxy.hung_up.is_set()


def idle_session(client: httpx.Client, url: str) -> tuple[str, int]:
    """A session whose first turn has ended, and the index its next event gets."""
    sid = start_session(client, url, "weather in Porto")["sessionId"]
    read_stream(client, url, sid, until=turn_ends())
    return sid, len(dump(client, url, sid))


def test_a_retry_that_outlasts_its_wait_is_a_409_with_retry_after(
    serve: ServeFactory, hang_up: Any
) -> None:
    served = serve(env={WAIT_ENV: "0.2"})
    url = served.url
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"input": {"label": "once"}, "sessionId": ""}
    with httpx.Client(timeout=30) as client:
        sid, next_index = idle_session(client, url)
        body["sessionId"] = sid
        send_and_hang_up(client, served, hang_up(served), sid, headers, next_index)

        busy = client.post(f"{url}/v1/tools/slow_job", json=body, headers=headers)
        assert busy.status_code == 409, busy.text
        assert busy.json()["ok"] is False
        assert busy.json()["error"] == "idempotency_key_in_use"
        assert busy.json()["message"]
        assert int(busy.headers["retry-after"]) >= 1
        assert busy.json()["retryAfter"] == int(busy.headers["retry-after"])
        assert "idempotent-replayed" not in busy.headers

        served.open_gate(sid)
        read_stream(
            client,
            url,
            sid,
            start=next_index,
            until=lambda e: e["type"] == "action.result" and not e.get("turnId"),
        )
        retried = client.post(f"{url}/v1/tools/slow_job", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        assert retried.json()["result"] == {"done": "once"}
        assert [e["data"]["callId"] for e in direct_results(client, url, sid)] == [
            retried.json()["callId"]
        ]


def wait_for_line(served: Served, text: str, timeout: float = 30.0) -> None:
    """Wait until the server's log shows `text`."""
    deadline = time.monotonic() + timeout
    while text not in served.output():
        assert time.monotonic() < deadline, served.output()
        assert served.proc is not None and served.proc.poll() is None, served.output()
        time.sleep(0.02)


def test_a_server_stopped_mid_write_lets_it_finish_and_the_retry_replays_it(
    serve: ServeFactory, hang_up: Any
) -> None:
    # Its client is gone, so the request counts as open until `--shutdown-timeout`; the
    # gate opens only after that, while the drain waits on the job.
    served = serve("--shutdown-timeout", "0.2")
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    with httpx.Client(timeout=30) as client:
        sid, next_index = idle_session(client, served.url)
        send_and_hang_up(client, served, hang_up(served), sid, headers, next_index)

        # Stop the server while the job runs; once it is shutting down, let the job end.
        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        wait_for_line(served, "Waiting for application shutdown.")
        served.open_gate(sid)
        assert served.proc.wait(30) == 0, served.output()
        assert "keyed write(s) still running at shutdown" not in served.output()

        served.port = 0
        served.start()  # on the same state folder
        url = served.url
        retried = client.post(
            f"{url}/v1/tools/slow_job",
            json={"input": {"label": "once"}, "sessionId": sid},
            headers=headers,
        )
        assert retried.status_code == 200, retried.text
        assert retried.headers["idempotent-replayed"] == "true"
        assert retried.json()["result"] == {"done": "once"}
        events = dump(client, url, sid)
        direct = [e for e in events if not e.get("turnId") and e["type"].startswith("action")]
        assert [e["type"] for e in direct] == ["actions.requested", "action.result"]
        assert direct[-1]["data"]["callId"] == retried.json()["callId"]


def test_a_write_still_running_at_the_drain_deadline_is_not_run_again(
    serve: ServeFactory, hang_up: Any
) -> None:
    # The job never ends: the stop waits `--shutdown-timeout` for the open request, then
    # `--drain-timeout` for the job, then cuts it off. Its record stays, so the retry after
    # the restart is told to come back instead of running it.
    served = serve("--shutdown-timeout", "0.2", "--drain-timeout", "0.2")
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    with httpx.Client(timeout=30) as client:
        sid, next_index = idle_session(client, served.url)
        send_and_hang_up(client, served, hang_up(served), sid, headers, next_index)
        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == 0, served.output()

        served.port = 0
        served.start()
        url = served.url
        busy = client.post(
            f"{url}/v1/tools/slow_job",
            json={"input": {"label": "once"}, "sessionId": sid},
            headers=headers,
        )
        assert busy.status_code == 409, busy.text
        assert busy.json()["error"] == "idempotency_key_in_use"
        assert int(busy.headers["retry-after"]) >= 1
        requested = [
            e
            for e in dump(client, url, sid)
            if e["type"] == "actions.requested" and not e.get("turnId")
        ]
        assert len(requested) == 1  # the cut-off call, not run a second time
