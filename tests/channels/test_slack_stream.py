"""Streamed replies end to end: a signed mention into `agentkit serve`, the model's text
streamed by the real openai client from a loopback chat server, the reply streamed into
the thread by the real slack_sdk client (`chat.startStream` / `appendStream` /
`stopStream`) to the Web API stand-in."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.channels.chat_standin import ChatStandIn, Script
from tests.channels.conftest import write
from tests.channels.slack_payloads import CHANNEL, TEAM, envelope, mention
from tests.channels.slack_project import SECRET, SLACK_FILES, TOKEN
from tests.channels.slack_standin import SlackStandIn
from tests.channels.test_slack_http import send_event, wait_for
from tests.fixtures.http_server import Served, _env
from tests.server.helpers import dump, read_stream, turn_ends

STREAM_CHANNEL = """
    import os

    from agentkit.channels.slack import slack_channel

    channel = slack_channel(
        approvers=["U0LEAD"],
        stream_interval=float(os.environ["STREAM_INTERVAL"]),
        stream_size=int(os.environ["STREAM_SIZE"]),
    )
"""


def piece(i: int) -> str:
    """A delta of 300 characters: the engine records each as its own `message.appended`
    (it coalesces only below 256), so the number of deltas the pack sees is exact."""
    head = f"Part {i}: "
    return head + "all good here " * ((300 - len(head)) // 14) + "x" * ((300 - len(head)) % 14)


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    server = SlackStandIn(streams=True).start()
    yield server
    server.stop()


@pytest.fixture
def chat() -> Iterator[ChatStandIn]:
    server = ChatStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def serve_stream(
    tmp_path: Path, standin: SlackStandIn, chat: ChatStandIn
) -> Iterator[Callable[..., Served]]:
    project = write(
        tmp_path / "helpdesk", {**SLACK_FILES, "agent/channels/slack.py": STREAM_CHANNEL}
    )
    started: list[Served] = []

    def factory(interval: float, size: int = 100_000) -> Served:
        env = _env(
            {
                "SLACK_BOT_TOKEN": TOKEN,
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": standin.url,
                "RESTART_LOG": str(tmp_path / "restarts.log"),
                "AGENTKIT_MODEL": "openai:gpt-4o",
                "OPENAI_BASE_URL": chat.url,
                "OPENAI_API_KEY": "sk-standin",
                "STREAM_INTERVAL": str(interval),
                "STREAM_SIZE": str(size),
            }
        )
        served = Served(project, tmp_path / f"state{len(started)}", ["--dev"], env)
        started.append(served)
        return served.start()

    yield factory
    for served in started:
        served.stop()
        assert "Traceback" not in served.output(), served.output()


def ask(served: Served, text: str, ts: str, script: Script, chat: ChatStandIn) -> tuple[str, str]:
    """Mention the app with `text`; the model answers with `script`. (session id, reply)"""
    chat.queue(script)
    r = send_event(served.url, envelope(mention(text, ts)))
    assert r.status_code == 200, r.text
    sid = str(r.json()["sessionId"])
    return sid, ts


def finished(served: Served, sid: str, turns: int = 1) -> list[dict]:
    with httpx.Client(timeout=60) as client:
        read_stream(client, served.url, sid, until=turn_ends(turns))
        return dump(client, served.url, sid)


def reply_of(events: list[dict]) -> str:
    return str([e for e in events if e["type"] == "turn.completed"][-1]["data"]["result"])


def test_mention_streams_a_buffered_reply(serve_stream, standin, chat) -> None:
    # A size threshold only (the interval never comes due): what is sent when is exact.
    served = serve_stream(interval=3600, size=1000)
    deltas = [piece(i) for i in range(6)]
    sid, ts = ask(served, "how is billing doing?", "1700000101.000100", list(deltas), chat)
    events = finished(served, sid)
    reply = reply_of(events)
    assert reply == "".join(deltas)
    appended = [e for e in events if e["type"] == "message.appended"]
    assert len(appended) == 6
    [message] = wait_for(lambda: [m for m in standin.messages() if m.stopped], "the stop")
    assert message.text == reply  # every word once, in order
    assert (message.channel, message.thread_ts) == (CHANNEL, ts)
    assert message.recipient == (TEAM, "U0ALICE")
    # Buffered: the first words at once, then a call per 1000 characters and one at the
    # step's end, instead of a call per delta.
    [start] = standin.of("chat.startStream")
    assert start.args["markdown_text"] == deltas[0]
    assert start.headers["authorization"] == f"Bearer {TOKEN}"
    appends = [c.args["markdown_text"] for c in standin.of("chat.appendStream")]
    assert appends == ["".join(deltas[1:5]), deltas[5]]
    assert len(appends) < len(appended)
    # Nothing posted besides the stream: the reply is not sent twice.
    wait_for(lambda: standin.of("reactions.remove"), "the turn's end")
    assert standin.posts() == []


def test_a_stream_finalized_while_idle_carries_on_in_a_new_message(
    serve_stream, standin, chat
) -> None:
    served = serve_stream(interval=0)  # every delta is sent as it comes
    gate = threading.Event()
    first, later = [piece(0), piece(1)], [piece(2), piece(3)]
    sid, ts = ask(served, "restart check", "1700000102.000100", [*first, gate, *later], chat)
    try:
        # The model is idle (the gate is closed) once Slack has the first part...
        wait_for(
            lambda: [m for m in standin.messages() if m.text == "".join(first)], "the first part"
        )
        # ...and Slack finalizes the idle stream.
        assert len(standin.finalize_streams()) == 1
    finally:
        gate.set()
    events = finished(served, sid)
    reply = reply_of(events)
    assert reply == "".join(first + later)
    done = wait_for(
        lambda: [m for m in standin.messages() if m.stopped], "the second message stopped"
    )
    old, new = standin.messages()
    assert done == [new] and not old.stopped and not old.streaming
    # The reply carries on in the same thread: nothing lost, nothing repeated.
    assert old.text == "".join(first) and new.text == "".join(later)
    assert old.text + new.text == reply
    assert new.thread_ts == old.thread_ts == ts
    refused = [c for c in standin.of("chat.appendStream") if c.args["ts"] == old.ts]
    assert refused[-1].args["markdown_text"] == later[0]  # refused, then sent in the new one
    assert standin.posts() == []


def test_without_the_streaming_methods_the_reply_is_posted_once(
    serve_stream, standin, chat
) -> None:
    standin.streams = False  # chat.startStream answers unknown_method, as without them
    served = serve_stream(interval=0)
    sid, ts = ask(served, "first question", "1700000103.000100", [piece(0), piece(1)], chat)
    reply = reply_of(finished(served, sid))
    [post] = wait_for(standin.posts, "the reply")
    assert post.args["thread_ts"] == ts and post.args["text"] == reply
    assert len(standin.of("chat.startStream")) == 1
    assert standin.of("chat.appendStream") == standin.of("chat.stopStream") == []
    # Remembered for the workspace: the next turn posts without asking again.
    sid, ts = ask(served, "second question", "1700000104.000100", ["Short answer."], chat)
    finished(served, sid)
    wait_for(lambda: len(standin.posts()) == 2, "the second reply")
    assert standin.posts()[1].args["text"] == "Short answer."
    assert len(standin.of("chat.startStream")) == 1


def test_a_rate_limited_append_is_retried(serve_stream, standin, chat) -> None:
    standin.rate_limit_appends = 1  # the first appendStream meets 429 with Retry-After: 1
    served = serve_stream(interval=0)
    deltas = [piece(0), piece(1), piece(2)]
    sid, _ = ask(served, "status please", "1700000105.000100", list(deltas), chat)
    reply = reply_of(finished(served, sid))
    [message] = wait_for(lambda: [m for m in standin.messages() if m.stopped], "the stop")
    assert message.text == reply == "".join(deltas)
    assert [c.method for c in standin.calls if c.method == "ratelimited"] == ["ratelimited"]
    assert [c.args["markdown_text"] for c in standin.of("chat.appendStream")] == deltas[1:]
    assert standin.posts() == []
