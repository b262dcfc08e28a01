"""examples/slack-helpdesk: a signed mention to `agentkit serve` gets an answer in its
thread through the real client, and a password reset waits for an approver's button."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.slack_payloads import CHANNEL, envelope, event_request, mention
from tests.channels.slack_standin import SlackStandIn
from tests.fixtures.http_server import Served, _env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "slack-helpdesk"
SECRET = "example-signing-secret"


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    server = SlackStandIn().start()
    yield server
    server.stop()


def wait_for(check: Callable[[], Any], served: Served) -> Any:
    deadline = time.monotonic() + 90
    while not (value := check()):
        assert time.monotonic() < deadline, served.output()
        time.sleep(0.05)
    return value


def test_helpdesk_answers_in_the_thread(tmp_path: Path, standin: SlackStandIn) -> None:
    env = _env(
        {
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_BOT_TOKEN": "xoxb-example",
            "SLACK_API_URL": standin.url,
            "HELPDESK_APPROVERS": "U0LEAD",
        }
    )
    served = Served(EXAMPLE, tmp_path / "state", ["--mode", "single"], env).start()
    try:
        url = f"{served.url}/v1/channels/slack/events"
        body, headers = event_request(envelope(mention("look up ticket IT-1", "1.1")), SECRET)
        r = httpx.post(url, content=body, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        [post] = wait_for(standin.posts, served)
        assert post.args["thread_ts"] == "1.1" and post.args["channel"] == CHANNEL
        assert "look_up_ticket" in post.args["text"]  # the offline model quotes the tool
        body, headers = event_request(envelope(mention("reset password for sam", "2.1")), SECRET)
        assert httpx.post(url, content=body, headers=headers, timeout=30).status_code == 200
        ask = wait_for(lambda: [p for p in standin.posts() if "blocks" in p.args], served)
        assert "reset_password" in ask[0].args["text"] and ask[0].args["thread_ts"] == "2.1"
    finally:
        served.stop()
