"""The Slack pack end to end over HTTP: requests signed as Slack signs them into `agentkit
serve`, replies and approvals posted through the real slack_sdk client to a Web API
stand-in on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from tests.channels.conftest import write
from tests.channels.slack_payloads import (
    BOT,
    CHANNEL,
    TEAM,
    block_action,
    direct_message,
    envelope,
    event_request,
    interaction_request,
    mention,
    url_verification,
)
from tests.channels.slack_project import APPROVER, SECRET, SLACK_FILES, TOKEN
from tests.channels.slack_standin import SlackStandIn
from tests.fixtures.http_server import Served, _env
from tests.server.helpers import dump, read_stream, turn_ends


@pytest.fixture(scope="module")
def slack_api() -> Iterator[SlackStandIn]:
    server = SlackStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def standin(slack_api: SlackStandIn) -> SlackStandIn:
    """The module's Slack stand-in, with nothing recorded yet."""
    slack_api.reset()
    return slack_api


@pytest.fixture(scope="module")
def slack_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("slack")


@pytest.fixture
def restart_log(slack_base: Path) -> Path:
    """Where the restart tool writes; empty at the start of each test."""
    log = slack_base / "restarts.log"
    log.unlink(missing_ok=True)
    return log


def slack_env(api: SlackStandIn, restart_log: Path, secret: str | None) -> dict[str, str]:
    env = _env(
        {"SLACK_BOT_TOKEN": TOKEN, "SLACK_API_URL": api.url, "RESTART_LOG": str(restart_log)}
    )
    env.pop("SLACK_SIGNING_SECRET", None)  # never inherited from the shell
    if secret is not None:
        env["SLACK_SIGNING_SECRET"] = secret
    return env


@pytest.fixture
def serve_slack(tmp_path: Path, standin: SlackStandIn, restart_log: Path) -> Iterator[Callable]:
    """A server of the test's own: for a test that needs another secret, or what a
    process learns once (whether Slack offers `setStatus`) still unlearned."""
    project = write(tmp_path / "helpdesk", SLACK_FILES)
    started: list[Served] = []

    def factory(*args: str, secret: str | None = SECRET) -> Served:
        env = slack_env(standin, restart_log, secret)
        served = Served(project, tmp_path / f"state{len(started)}", list(args), env)
        started.append(served)
        return served.start()

    yield factory
    for served in started:
        served.stop()
        assert "Traceback" not in served.output(), served.output()


@pytest.fixture(scope="module")
def shared_slack(slack_base: Path, slack_api: SlackStandIn) -> Iterator[Served]:
    """One `--dev` server (reminders fire by hand only) for the tests that only touch
    threads of their own (each test uses its own message timestamps, so its own sessions)."""
    project = write(slack_base / "helpdesk", SLACK_FILES)
    env = slack_env(slack_api, slack_base / "restarts.log", SECRET)
    served = Served(project, slack_base / "state", ["--dev"], env).start()
    yield served
    served.stop()
    assert "Traceback" not in served.output(), served.output()


@pytest.fixture
def slack(shared_slack: Served, standin: SlackStandIn, restart_log: Path) -> Iterator[Served]:
    before = session_ids(shared_slack.url)
    yield shared_slack
    # What this test started reaches the stand-in before the next test's reset: every
    # turn begun has ended and its thread's progress reaction is gone.
    wait_for(lambda: delivered(shared_slack, standin, before), "every turn's last Slack call")


def session_ids(url: str) -> set[str]:
    return {s["sessionId"] for s in listed(url)}


def delivered(served: Served, standin: SlackStandIn, before: set[str]) -> bool:
    removed = [
        (c.args.get("channel"), c.args.get("timestamp")) for c in standin.of("reactions.remove")
    ]
    with httpx.Client(timeout=30) as client:
        for session in listed(served.url):
            if session["sessionId"] in before:
                continue
            _, _, channel, ts = session["continuationKey"].split(":", 3)
            types = [e["type"] for e in dump(client, served.url, session["sessionId"])]
            ends = sum(t in ("turn.completed", "turn.failed") for t in types)
            if types.count("turn.started") != ends or removed.count((channel, ts)) < ends:
                return False
    return True


def send_event(
    url: str, payload: dict, *, secret: str | None = SECRET, **kw: Any
) -> httpx.Response:
    body, headers = event_request(payload, secret, **kw)
    return httpx.post(f"{url}/v1/channels/slack/events", content=body, headers=headers, timeout=30)


def click(url: str, payload: dict, *, secret: str | None = SECRET, **kw: Any) -> httpx.Response:
    body, headers = interaction_request(payload, secret, **kw)
    return httpx.post(
        f"{url}/v1/channels/slack/interactions", content=body, headers=headers, timeout=30
    )


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def listed(url: str) -> list[dict]:
    return list(httpx.get(f"{url}/v1/sessions", timeout=30).json()["sessions"])


def test_signatures_are_slacks_own() -> None:
    """What the tests send is what Slack sends: slack_sdk's verifier accepts it."""
    body, headers = event_request(envelope(mention("hi", "1.1")), SECRET)
    lowered = {k.lower(): v for k, v in headers.items()}
    assert SignatureVerifier(SECRET).is_valid_request(body, lowered)
    assert not SignatureVerifier("another secret").is_valid_request(body, lowered)
    form, form_headers = interaction_request({"type": "block_actions"}, SECRET)
    assert SignatureVerifier(SECRET).is_valid_request(
        form, {k.lower(): v for k, v in form_headers.items()}
    )


def test_url_verification_and_refused_signatures(slack: Served, standin: SlackStandIn) -> None:
    before = session_ids(slack.url)
    r = send_event(
        slack.url, url_verification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    payload = envelope(mention("what is the weather in Oslo", "1700000001.000100"))
    assert send_event(slack.url, payload, secret=None).status_code == 401
    assert send_event(slack.url, payload, secret="not the secret").status_code == 401
    stale = send_event(slack.url, payload, timestamp=int(time.time()) - 6 * 60)
    assert stale.status_code == 401 and stale.json()["ok"] is False
    # A valid signature over another body does not carry over.
    body, headers = event_request(payload, SECRET)
    forged = body.replace(b"Oslo", b"Rome")
    r = httpx.post(f"{slack.url}/v1/channels/slack/events", content=forged, headers=headers)
    assert r.status_code == 401
    refused_click = click(
        slack.url,
        block_action("agentkit_approve", "{}", user=APPROVER, message_ts="1.2", thread_ts="1.1"),
        secret="not the secret",
    )
    assert refused_click.status_code == 401
    assert session_ids(slack.url) == before
    assert standin.calls == []


def test_mention_gets_a_reply_in_its_thread(serve_slack: Callable, standin: SlackStandIn) -> None:
    # A server of its own: the first turn of a process is where it learns that setStatus
    # is not offered (checked below).
    slack = serve_slack("--dev")
    standin.rate_limit_posts = 1  # the first post meets a 429 with Retry-After: retried
    ts = "1700000002.000200"
    r = send_event(slack.url, envelope(mention("what is the weather in Paris", ts)))
    assert r.status_code == 200, r.text
    key = f"slack:{TEAM}:{CHANNEL}:{ts}"
    assert r.json()["key"] == key
    sid = r.json()["sessionId"]
    [post] = wait_for(standin.posts, "the reply in the thread")
    assert post.args["channel"] == CHANNEL and post.args["thread_ts"] == ts
    assert post.headers["authorization"] == f"Bearer {TOKEN}"
    assert [c.method for c in standin.calls if c.method == "ratelimited"] == ["ratelimited"]
    with httpx.Client(timeout=30) as client:
        events = dump(client, slack.url, sid)
    first = next(e for e in events if e["type"] == "message.received")["data"]["message"]
    assert first == "what is the weather in Paris"  # the mention removed
    assert any(
        e["type"] == "action.result" and e["data"]["toolName"] == "get_weather" for e in events
    )
    answer = next(e for e in events if e["type"] == "turn.completed")["data"]["result"]
    assert "Paris" in answer and "Paris" in post.args["text"]
    # Progress: setStatus is not offered here, so an :eyes: reaction on the message, removed.
    assert standin.of("assistant.threads.setStatus")
    wait_for(lambda: standin.of("reactions.remove"), "the progress reaction removed")
    [added] = standin.of("reactions.add")
    assert added.args == {"channel": CHANNEL, "name": "eyes", "timestamp": ts}
    [session] = [s for s in listed(slack.url) if s["sessionId"] == sid]
    assert session["principal"] == "channel:slack" and session["continuationKey"] == key
    # A reply in the thread continues the same session and is answered in the thread.
    r = send_event(
        slack.url, envelope(mention("and the weather in Lyon?", "1700000003.0", thread_ts=ts))
    )
    assert r.json()["sessionId"] == sid
    wait_for(lambda: len(standin.posts()) == 2, "the second reply")
    assert standin.posts()[1].args["thread_ts"] == ts


def test_retried_and_redelivered_events_start_one_turn(slack: Served, standin) -> None:
    ts = "1700000004.000400"
    payload = envelope(mention("what is the weather in Madrid", ts), event_id="Ev0RETRY")
    first = send_event(slack.url, payload)
    retried = send_event(slack.url, payload, retry=1)
    # The same message under another event id (Slack has been seen to do this).
    again = send_event(
        slack.url, envelope(mention("what is the weather in Madrid", ts), "Ev0OTHER")
    )
    assert first.status_code == retried.status_code == again.status_code == 200
    assert retried.json() == {"ok": True, "duplicate": True}
    assert again.json() == {"ok": True, "duplicate": True}
    sid = first.json()["sessionId"]
    with httpx.Client(timeout=30) as client:
        read_stream(client, slack.url, sid, until=turn_ends())
        events = dump(client, slack.url, sid)
    assert len([e for e in events if e["type"] == "message.received"]) == 1
    wait_for(standin.posts, "the reply")
    time.sleep(0.5)  # would a second reply arrive? (widens the check only)
    assert len(standin.posts()) == 1


def test_bot_posts_edits_and_other_channels_are_ignored(slack: Served) -> None:
    own = mention("hello", "1.5", user=BOT)
    edited = direct_message("hi", "1.6", subtype="message_changed")
    bot = direct_message("hi", "1.7", bot_id="B0OTHER")
    channel_msg = {**direct_message("hi", "1.8"), "channel_type": "channel"}
    answers = [send_event(slack.url, envelope(e)).json() for e in (own, edited, bot, channel_msg)]
    assert [a.get("ignored") for a in answers] == [
        "own message",
        "message subtype message_changed",
        "bot message",
        "message outside a direct conversation",
    ]
    dm = send_event(slack.url, envelope(direct_message("what is the weather in Nice", "1.9")))
    assert dm.json()["key"] == f"slack:{TEAM}:D0ALICE:1.9"
    assert listed(slack.url)[0]["sessionId"] == dm.json()["sessionId"]


def approval_request(standin: SlackStandIn) -> Any:
    return wait_for(
        lambda: [p for p in standin.posts() if "blocks" in p.args], "the approval buttons"
    )[0]


def test_approval_buttons(slack: Served, standin: SlackStandIn, restart_log: Path) -> None:
    ts = "1700000005.000500"
    sid = send_event(slack.url, envelope(mention("please restart the billing service", ts))).json()[
        "sessionId"
    ]
    ask = approval_request(standin)
    assert ask.args["thread_ts"] == ts and "restart_service" in ask.args["text"]
    buttons = {e["action_id"]: e["value"] for e in ask.args["blocks"][-1]["elements"]}
    assert set(buttons) == {"agentkit_approve", "agentkit_deny"}
    value = json.loads(buttons["agentkit_approve"])
    assert value["s"] == sid
    message_ts = "1800000000.000001"

    def press(user: str, action: str = "agentkit_approve") -> httpx.Response:
        return click(
            slack.url,
            block_action(action, buttons[action], user=user, message_ts=message_ts, thread_ts=ts),
        )

    # A stranger's click: an ephemeral refusal, nothing decided.
    r = press("U0STRANGER")
    assert r.status_code == 200, r.text
    assert r.json() == {"ok": True, "refused": "U0STRANGER"}
    [note] = standin.of("chat.postEphemeral")
    assert note.args["user"] == "U0STRANGER" and "approver" in note.args["text"]
    pending = httpx.get(f"{slack.url}/v1/session/{sid}/approvals").json()["approvals"]
    assert [p["callId"] for p in pending] == [value["c"]]
    assert not restart_log.exists()
    # The approver's click (form-encoded, signed): exactly that call is approved.
    r = press(APPROVER)
    assert r.json() == {"ok": True, "callId": value["c"], "decision": "approve"}
    [update] = standin.of("chat.update")
    assert update.args["ts"] == message_ts and update.args["channel"] == CHANNEL
    assert f"Approved by <@{APPROVER}>" in update.args["text"]
    assert "actions" not in [b["type"] for b in update.args["blocks"]]
    with httpx.Client(timeout=30) as client:
        read_stream(client, slack.url, sid, until=turn_ends())
    # A second click (or a click on Deny) after the decision changes nothing and says so.
    again = press(APPROVER, "agentkit_deny")
    assert again.json() == {"ok": True, "stale": value["c"]}
    assert "no longer pending" in standin.of("chat.postEphemeral")[-1].args["text"]
    assert restart_log.read_text().splitlines() == ["billing"]  # the tool ran once
    wait_for(lambda: [p for p in standin.posts() if "restarted" in p.args["text"]], "the reply")


def test_reminder_fires_back_into_the_thread(slack: Served, standin: SlackStandIn) -> None:
    ts = "1700000006.000600"
    r = send_event(slack.url, envelope(mention("remind me later about this ticket", ts)))
    sid = r.json()["sessionId"]
    with httpx.Client(timeout=30) as client:
        read_stream(client, slack.url, sid, until=turn_ends())
    wait_for(lambda: len(standin.posts()) == 1, "the first reply")
    [reminder] = httpx.get(f"{slack.url}/v1/dev/reminders").json()["reminders"]
    fired = httpx.post(f"{slack.url}/v1/dev/reminders/{reminder['id']}", timeout=30)
    assert fired.status_code == 200, fired.text
    with httpx.Client(timeout=30) as client:
        read_stream(client, slack.url, sid, until=turn_ends(2))
    second = wait_for(lambda: standin.posts()[1:], "the reminder's reply")[0]
    assert second.args["thread_ts"] == ts and second.args["channel"] == CHANNEL


def test_host_slack_is_the_authenticated_client(slack: Served, standin: SlackStandIn) -> None:
    r = send_event(slack.url, envelope(direct_message("check the slack identity", "1.10")))
    sid = r.json()["sessionId"]
    with httpx.Client(timeout=30) as client:
        read_stream(client, slack.url, sid, until=turn_ends())
        events = dump(client, slack.url, sid)
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["result"] == {"identityOk": True}
    [auth] = standin.of("auth.test")
    assert auth.headers["authorization"] == f"Bearer {TOKEN}"


def test_unsigned_only_from_loopback_without_a_secret(serve_slack, standin) -> None:
    served = serve_slack("--dev", secret=None)
    payload = envelope(mention("what is the weather in Bern", "1.11"))
    body, headers = event_request(payload, None)
    tunnelled = httpx.post(
        f"{served.url}/v1/channels/slack/events",
        content=body,
        headers={**headers, "X-Forwarded-For": "3.4.5.6"},
    )
    assert tunnelled.status_code == 401
    local = httpx.post(f"{served.url}/v1/channels/slack/events", content=body, headers=headers)
    assert local.status_code == 200, local.text
    # A web page in the developer's browser can POST a form to loopback without a
    # preflight (a "simple" request): it names its Origin, and is refused.
    form, form_headers = interaction_request(
        block_action("agentkit_approve", "{}", user=APPROVER, message_ts="1.2", thread_ts="1.11"),
        None,
    )
    browser = httpx.post(
        f"{served.url}/v1/channels/slack/interactions",
        content=form,
        headers={
            **form_headers,
            "Origin": "https://attacker.example",
            "Sec-Fetch-Site": "cross-site",
        },
    )
    assert browser.status_code == 401
    rebound = httpx.post(
        f"{served.url}/v1/channels/slack/events",
        content=body,
        headers={**headers, "Host": "attacker.example"},
    )
    assert rebound.status_code in (401, 421)


@pytest.mark.parametrize("stamp", ["abc", "", "1.5"])
def test_a_malformed_timestamp_is_401_not_a_crash(slack: Served, stamp: str) -> None:
    from tests.channels.slack_payloads import sign

    body = json.dumps(url_verification("challenge-x"), separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        # Signed over the malformed stamp too: only the timestamp's shape is wrong.
        "X-Slack-Signature": sign(SECRET, stamp, body),
    }
    r = httpx.post(
        f"{slack.url}/v1/channels/slack/events", content=body, headers=headers, timeout=30
    )
    assert r.status_code == 401, r.text
    assert r.json()["ok"] is False
    assert "Traceback" not in slack.output()
