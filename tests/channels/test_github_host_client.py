"""`host.github` from a tool and from a route handler, and the default PR actions that
continue one session (reopened, ready_for_review, synchronize), over HTTP against
`agentkit serve` with the GitHub REST stand-in on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.conftest import write
from tests.channels.github_payloads import delivery, pull_request
from tests.channels.github_standin import GitHubStandIn
from tests.fixtures.http_server import Served, _env
from tests.server.helpers import dump, read_stream, turn_ends

SECRET = "host-client-secret"
TOKEN = "ghs_host_client_token"
FILES = {
    "agent/agent.py": "from agentkit import define_agent\n\nagent = define_agent(model='test')\n",
    "agent/instructions.md": "You review pull requests.\n",
    "agent/channels/github.py": """
        from agentkit.channels.github import github_channel

        channel = github_channel(bot_login="agentkit-bot")
    """,
    # A tool that reads the PR through `host.github` (the word "head" is in every PR
    # message, so the offline test model calls it on each of them).
    "agent/tools/live_head.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool
        from agentkit.channels.github import parse_key


        class HeadInput(BaseModel):
            note: str = ""


        @define_tool(description="Read the pull request's live head from GitHub.")
        async def live_head(input: HeadInput, ctx: ToolContext) -> dict:
            ref = parse_key(ctx.session.continuation_key if ctx.session else None)
            if ref is None:
                return {"error": "not a pull request conversation"}
            pr = await ctx.host.github.get_pr(ref.owner, ref.repo, ref.number)
            return {"liveHead": pr["head"]["sha"]}
    """,
    # A custom channel whose route handler comments through `host.github`.
    "agent/channels/relay.py": """
        from pydantic import BaseModel, Field
        from agentkit import define_channel, route


        class Note(BaseModel):
            number: int = Field(ge=1)
            text: str = Field(min_length=1)


        async def relay(body: Note, ctx):
            posted = await ctx.host.github.comment("octo", "widgets", body.number, body.text)
            return {"commentId": posted["id"]}


        channel = define_channel(routes=[route("POST", "/", relay)])
    """,
}


@pytest.fixture
def served(tmp_path: Path, github_standin: GitHubStandIn) -> Iterator[Served]:
    project = write(tmp_path / "reviewer", FILES)
    env = _env(
        {
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_API_URL": github_standin.url,
        }
    )
    server = Served(project, tmp_path / "state", ["--mode", "single", "--dev"], env).start()
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


def post(url: str, event: str, payload: dict) -> httpx.Response:
    body, headers = delivery(event, payload, SECRET)
    return httpx.post(f"{url}/v1/channels/github", content=body, headers=headers, timeout=30)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_tool_reads_the_pr_through_host_github(
    served: Served, github_standin: GitHubStandIn
) -> None:
    # GitHub's live head differs from the one in the delivery: only an API read finds it.
    github_standin.heads["octo/widgets#31"] = "e" * 40
    r = post(served.url, "pull_request", pull_request("opened", 31, title="Tidy", head="a" * 40))
    assert r.status_code == 200, r.text
    sid = r.json()["sessionId"]
    [reply] = wait_for(lambda: github_standin.comments(31), "the reply")
    reads = [q for q in github_standin.requests if q.method == "GET"]
    assert [q.path for q in reads] == ["/repos/octo/widgets/pulls/31"]
    assert reads[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert "e" * 40 in reply.body["body"]  # the tool's result, quoted in the reply
    with httpx.Client(timeout=30) as client:
        events = dump(client, served.url, sid)
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [d["result"] for d in results] == [{"liveHead": "e" * 40}]


def test_a_route_handler_comments_through_host_github(
    served: Served, github_standin: GitHubStandIn
) -> None:
    r = httpx.post(
        f"{served.url}/v1/channels/relay", json={"number": 32, "text": "Thanks!"}, timeout=30
    )
    assert r.status_code == 200, r.text
    assert isinstance(r.json()["commentId"], int)
    [comment] = github_standin.comments(32)
    assert comment.body == {"body": "Thanks!"}
    assert comment.headers["authorization"] == f"Bearer {TOKEN}"


def test_reopened_ready_and_pushed_prs_continue_one_session(
    served: Served, github_standin: GitHubStandIn
) -> None:
    github_standin.heads["octo/widgets#33"] = "a" * 40
    actions = [
        ("opened", "a" * 40),
        ("reopened", "a" * 40),
        ("ready_for_review", "a" * 40),
        ("synchronize", "b" * 40),
    ]
    sids = []
    with httpx.Client(timeout=30) as client:
        for turn, (action, head) in enumerate(actions, start=1):
            r = post(served.url, "pull_request", pull_request(action, 33, title="Tidy", head=head))
            assert r.status_code == 200, r.text
            assert r.json()["key"] == "pr:octo/widgets#33"
            sids.append(r.json()["sessionId"])
            read_stream(client, served.url, sids[-1], until=turn_ends(turn), window=120)
        messages = [
            e["data"]["message"]
            for e in dump(client, served.url, sids[0])
            if e["type"] == "message.received"
        ]
    assert len(set(sids)) == 1
    assert [m.splitlines()[-1] for m in messages] == [f"Action: {a}" for a, _ in actions]
    assert "was ready for review" in messages[2]
    assert f"Head SHA: {'b' * 40}" in messages[3]
    # Other pull_request actions start nothing.
    ignored = post(
        served.url, "pull_request", pull_request("labeled", 33, title="x", head="b" * 40)
    )
    assert ignored.json() == {"ok": True, "ignored": "pull_request.labeled"}
    wait_for(lambda: len(github_standin.comments(33)) == len(actions), "one reply per turn")
