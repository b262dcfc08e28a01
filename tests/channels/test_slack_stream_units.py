"""The streamed reply's edges, through the real slack_sdk client to the Web API stand-in:
the interval on an injected clock, a stop after Slack finalized the idle stream, Slack's
per-call size limit, a failure mid-stream, approvals and failed turns in between."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agentkit.authoring.channels import ChannelEventContext
from agentkit.authoring.contexts import HostServices, SessionInfo
from agentkit.channels.slack import SlackWebClient
from agentkit.channels.slack.keys import ThreadRef
from agentkit.channels.slack.replies import Replies
from agentkit.channels.slack.stream import MAX_MARKDOWN, ReplyStream
from agentkit.events import Event
from tests.channels.slack_standin import SlackStandIn

TOKEN = "xoxb-unit-token"
REF = ThreadRef("T1", "C2", "1.5")


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    server = SlackStandIn(streams=True).start()
    yield server
    server.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def client(standin: SlackStandIn) -> SlackWebClient:
    return SlackWebClient(token=TOKEN, api_url=standin.url, retries=1)


def test_text_waits_for_the_interval_or_the_size(standin) -> None:
    clock = Clock()
    stream = ReplyStream(client(standin), REF, interval=1.0, size=50, clock=clock)

    async def run() -> None:
        await stream.add("Hello")  # the first words go at once
        await stream.add(", world")
        clock.now += 0.5
        await stream.add(" and more")
        assert stream.pending == ", world and more"  # neither due yet
        clock.now += 0.6
        await stream.add(".")  # a second since the last send
        await stream.add("x" * 60)  # past the size
        await stream.stop()

    asyncio.run(run())
    assert [c.args["markdown_text"] for c in standin.of("chat.startStream")] == ["Hello"]
    appends = [c.args["markdown_text"] for c in standin.of("chat.appendStream")]
    assert appends == [", world and more.", "x" * 60]
    [stop] = standin.of("chat.stopStream")
    assert "markdown_text" not in stop.args
    [message] = standin.messages()
    assert message.text == "Hello, world and more." + "x" * 60 and message.stopped


def test_stop_after_slack_finalized_the_idle_stream(standin) -> None:
    stream = ReplyStream(client(standin), REF, interval=3600)

    async def run() -> None:
        await stream.add("Looking into it. ")
        await stream.add("The service is back.")  # waits for the interval
        standin.finalize_streams()
        await stream.stop()

    asyncio.run(run())
    first, second = standin.messages()
    assert first.text == "Looking into it. " and not first.stopped
    assert second.text == "The service is back." and second.stopped
    assert second.thread_ts == "1.5" and stream.pending == ""
    assert stream.delivered == "Looking into it. The service is back."


def test_text_past_slacks_limit_goes_in_several_calls(standin) -> None:
    stream = ReplyStream(client(standin), REF, interval=3600)
    long = "".join(f"line {i}\n" for i in range(3500))  # ~30k characters

    async def run() -> None:
        await stream.add("Here: ")
        await stream.add(long)
        await stream.stop()

    asyncio.run(run())
    sent = [c.args.get("markdown_text", "") for c in standin.calls if c.method.endswith("Stream")]
    assert all(len(t) <= MAX_MARKDOWN for t in sent) and len(sent) >= 4
    [message] = standin.messages()
    assert message.text == "Here: " + long


def event(kind: str, data: dict[str, Any], index: int, turn: str = "t-1") -> Event:
    return Event(kind, index, "s-1", "2026-11-30T00:00:00Z", data, turn_id=turn)


def live_ctx() -> ChannelEventContext:
    return ChannelEventContext(
        channel="slack",
        session=SessionInfo("s-1", "slack", continuation_key=REF.key),
        host=HostServices(),
        live=True,
    )


def test_a_failure_mid_stream_posts_the_rest(standin) -> None:
    replies = Replies(client(standin), stream_interval=0)
    on = replies.handlers()

    async def run() -> None:
        ctx = live_ctx()
        await on["message.appended"](event("message.appended", {"text": "First part. "}, 1), ctx)
        standin.fail_appends = "channel_not_found"
        await on["message.appended"](event("message.appended", {"text": "Second part."}, 2), ctx)
        text = "First part. Second part."
        await on["message.completed"](event("message.completed", {"text": text}, 3), ctx)
        await on["turn.completed"](event("turn.completed", {"result": text}, 4), ctx)

    asyncio.run(run())
    [message] = standin.messages()
    assert message.text == "First part. " and message.stopped  # finalized, not left open
    [post] = standin.posts()
    assert post.args["text"] == "Second part." and post.args["thread_ts"] == "1.5"
    assert replies.cannot_stream == set()  # a passing failure is not remembered


def test_approvals_end_the_stream_and_steps_start_paragraphs(standin) -> None:
    replies = Replies(client(standin), stream_interval=0)
    on = replies.handlers()

    async def run() -> None:
        ctx = live_ctx()
        await on["message.appended"](event("message.appended", {"text": "I will restart."}, 1), ctx)
        await on["message.completed"](event("message.completed", {"text": "x"}, 2), ctx)
        ask = {"callId": "c-1", "toolName": "restart_service", "arguments": {}}
        await on["action.approval_requested"](event("action.approval_requested", ask, 3), ctx)
        await on["message.appended"](event("message.appended", {"text": "Restarted."}, 4), ctx)
        await on["turn.completed"](event("turn.completed", {"result": "Restarted."}, 5), ctx)
        # A failed turn ends its stream before the note.
        await on["message.appended"](event("message.appended", {"text": "Trying"}, 6, "t-2"), ctx)
        await on["turn.failed"](event("turn.failed", {"error": "boom"}, 7, "t-2"), ctx)

    asyncio.run(run())
    before, after, failed = standin.messages()
    assert before.text == "I will restart." and before.stopped
    # The buttons come after the finalized first message; the rest streams below them.
    methods = [c.method for c in standin.calls if c.method.startswith("chat.")]
    ask_at = next(i for i, c in enumerate(standin.calls) if "blocks" in c.args)
    stop_at = next(i for i, c in enumerate(standin.calls) if c.method == "chat.stopStream")
    assert stop_at < ask_at, methods
    assert after.text == "Restarted." and after.stopped  # a new message: no blank lines
    assert failed.text == "Trying" and failed.stopped
    notes = [p.args["text"] for p in standin.posts() if "blocks" not in p.args]
    assert notes == ["Sorry, I could not finish that. Please try again."]
    assert replies.streams == {}


def test_each_step_starts_a_paragraph_of_the_same_message(standin) -> None:
    replies = Replies(client(standin), stream_interval=0)
    on = replies.handlers()

    async def run() -> None:
        ctx = live_ctx()
        await on["message.appended"](event("message.appended", {"text": "Checking."}, 1), ctx)
        await on["message.completed"](event("message.completed", {"text": "Checking."}, 2), ctx)
        await on["message.appended"](event("message.appended", {"text": "All up."}, 3), ctx)
        await on["turn.completed"](event("turn.completed", {"result": "All up."}, 4), ctx)

    asyncio.run(run())
    [message] = standin.messages()
    assert message.text == "Checking.\n\nAll up." and message.stopped
    assert standin.posts() == []
