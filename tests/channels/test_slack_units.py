"""The Slack pack's pieces: mrkdwn conversion and splitting, thread keys, the signature
check's window, and the progress handlers against the Web API stand-in (real client)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from slack_sdk.signature import Clock

from agentkit.authoring.channels import ChannelEventContext, ChannelRequest
from agentkit.authoring.contexts import HostServices, SessionInfo
from agentkit.channels.slack import SlackSignature, SlackWebClient, parse_key, split, thread_key
from agentkit.channels.slack.mrkdwn import to_mrkdwn
from agentkit.channels.slack.replies import Replies
from agentkit.events import Event
from tests.channels.slack_payloads import envelope, event_request, mention

SECRET = "unit-secret"
TOKEN = "xoxb-unit-token"


def test_markdown_becomes_mrkdwn() -> None:
    source = (
        "# Status\n**Billing** is *up* and ~~down~~ not.\n"
        "- see [the runbook](https://wiki.example/run?a=1&b=2)\n"
        "Use `a < b` here.\n```python\nif a < b and **c**:\n    pass\n```"
    )
    assert to_mrkdwn(source).splitlines() == [
        "*Status*",
        "*Billing* is _up_ and ~down~ not.",
        "• see <https://wiki.example/run?a=1&amp;b=2|the runbook>",
        "Use `a &lt; b` here.",
        "```",
        "if a &lt; b and **c**:",
        "    pass",
        "```",
    ]


def test_long_replies_split_under_the_limit_with_code_blocks_kept_whole() -> None:
    text = "intro\n\n```\n" + "\n".join(f"line {i}" for i in range(400)) + "\n```\n\noutro"
    pieces = split(text, limit=500)
    assert len(pieces) > 5
    assert all(len(p) <= 500 for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)  # every piece renders on its own
    joined = "\n".join(p.replace("```\n", "").replace("\n```", "") for p in pieces)
    assert all(f"line {i}\n" in joined + "\n" for i in range(400))
    assert split("short") == ["short"]
    assert split("x" * 1200, limit=500) == ["x" * 496, "x" * 496, "x" * 208]


def test_thread_keys_round_trip() -> None:
    key = thread_key("T1", "C2", "1700000000.000100")
    assert key == "slack:T1:C2:1700000000.000100"
    ref = parse_key(key)
    assert ref is not None and (ref.team, ref.channel, ref.thread_ts) == (
        "T1",
        "C2",
        "1700000000.000100",
    )
    assert parse_key("pr:octo/widgets#1") is None and parse_key("slack:T1:C2") is None


class FixedClock(Clock):
    def __init__(self, now: float) -> None:
        self.at = now

    def now(self) -> float:
        return self.at


def request(body: bytes, headers: dict[str, str], loopback: bool = False) -> ChannelRequest:
    return ChannelRequest(
        method="POST", path="/events", headers=headers, query={}, body=body, loopback=loopback
    )


def test_the_five_minute_window_uses_the_injected_clock() -> None:
    now = int(time.time())
    body, headers = event_request(envelope(mention("hi", "1.1")), SECRET, timestamp=now)
    clock = FixedClock(now + 299)
    auth = SlackSignature(SECRET, clock)
    assert auth(request(body, headers)) == "slack"
    clock.at = now + 301
    assert auth(request(body, headers)) is None
    clock.at = now - 301  # a timestamp from the future is refused too
    assert auth(request(body, headers)) is None
    # Signed requests only: being on loopback does not help once a secret is set.
    clock.at = now
    assert auth(request(body, {**headers, "X-Slack-Signature": "v0=00"}, loopback=True)) is None


def event(kind: str, data: dict[str, Any], index: int = 1) -> Event:
    return Event(kind, index, "s-1", "2026-11-30T00:00:00Z", data, turn_id="t-1")


def test_progress_uses_assistant_status_and_rotates_while_tools_run(slack_standin) -> None:
    replies = Replies(SlackWebClient(token=TOKEN, api_url=slack_standin.url, retries=1))
    ctx = ChannelEventContext(
        channel="slack",
        session=SessionInfo("s-1", "slack", continuation_key="slack:T1:C2:1.5"),
        host=HostServices(),
    )
    handlers = replies.handlers()

    async def run() -> None:
        await handlers["turn.started"](event("turn.started", {}), ctx)
        actions = {"actions": [{"callId": "c", "toolName": "get_weather", "arguments": {}}]}
        await handlers["actions.requested"](event("actions.requested", actions, 2), ctx)
        await handlers["turn.completed"](event("turn.completed", {"result": "**done**"}, 3), ctx)

    asyncio.run(run())
    statuses = [c.args["status"] for c in slack_standin.of("assistant.threads.setStatus")]
    assert statuses == ["is thinking…", "is running get_weather…", ""]
    assert all(
        c.args["channel_id"] == "C2" and c.args["thread_ts"] == "1.5"
        for c in slack_standin.of("assistant.threads.setStatus")
    )
    [post] = slack_standin.posts()
    assert post.args == {"channel": "C2", "thread_ts": "1.5", "text": "*done*", "mrkdwn": True}
    assert slack_standin.of("reactions.add") == []


def test_web_api_errors_are_logged_never_raised(caplog) -> None:
    # Nothing listens on port 9: connection errors are retried, then logged.
    replies = Replies(SlackWebClient(token=TOKEN, api_url="http://127.0.0.1:9/api/", retries=0))
    ctx = ChannelEventContext(
        channel="slack",
        session=SessionInfo("s-1", "slack", continuation_key="slack:T1:C2:1.5"),
        host=HostServices(),
    )
    asyncio.run(replies.on_turn_completed(event("turn.completed", {"result": "hi"}), ctx))
    assert any("chat.postMessage failed" in r.getMessage() for r in caplog.records)
