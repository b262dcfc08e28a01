"""The GitHub channel on Lambda: API Gateway events into ApiFunction, the reply posted by
HooksFunction from the events stream, credentials read from Secrets Manager (all on the
moto server), comments received by a GitHub REST stand-in on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.host import AwsHost
from agentkit.aws.settings import AwsSettings
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.server.auth import bearer_principal_id
from tests.aws.conftest import CapturingDispatcher, FakeContext, load_event
from tests.channels.github_payloads import delivery, issue_comment, pull_request
from tests.channels.github_standin import GitHubStandIn

SECRET = "webhook-secret-from-secrets-manager"
TOKEN = "ghs_token_from_secrets_manager"
FILES = {
    "agent/agent.py": "from agentkit import define_agent\n\nagent = define_agent(model='test')\n",
    "agent/instructions.md": "You review pull requests.\n",
    "agent/channels/github.py": """
        from agentkit.channels.github import github_channel

        channel = github_channel(approvers=["octo-lead"])
    """,
    # A custom channel on Lambda: validated route, the agent's bearer auth, delivery in
    # HooksFunction (reported through `host.github` so the stand-in sees it).
    "agent/channels/forms.py": """
        from pydantic import BaseModel, Field
        from agentkit import define_channel, route


        class Form(BaseModel):
            ticket: str = Field(min_length=1)
            text: str = Field(min_length=1)


        async def submit(body: Form, ctx):
            accepted = await ctx.receive(body.text, continuation_key=f"ticket:{body.ticket}")
            return {"sessionId": accepted.session_id}


        async def triage(body: Form, ctx):
            return {"task": f"Triage ticket {body.ticket}: {body.text}"}


        async def answered(event, ctx):
            key = ctx.session.continuation_key or ctx.session.id
            text = f"{key} {ctx.session.principal}: {event.data['result']}"
            await ctx.host.github.comment("octo", "forms", 1, text)


        channel = define_channel(
            routes=[route("POST", "/", submit), route("POST", "/triage", triage)],
            events={"turn.completed": answered},
        )
    """,
    "agent/tools/merge_pr.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class MergeInput(BaseModel):
            method: str = "squash"


        @define_tool(description="Merge the pull request.", needs_approval=True)
        async def merge_pr(input: MergeInput, ctx: ToolContext) -> dict:
            return {"merged": input.method}
    """,
}


class GitHubStack:
    def __init__(self, host: AwsHost, dispatcher: CapturingDispatcher, model: ScriptedModel):
        self.host, self.dispatcher, self.model = host, dispatcher, model

    def api(self, event: str, payload: dict, secret: str | None, **kw: Any) -> dict[str, Any]:
        body, headers = delivery(event, payload, secret, **kw)
        return self.post("/v1/channels/github", body, headers)

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """An HTTP API (payload 2.0) POST event from the internet into ApiFunction."""
        from agentkit.aws.handlers import api

        gateway = load_event("api/create-session.json")
        gateway["rawPath"] = gateway["requestContext"]["http"]["path"] = path
        gateway["headers"] = {
            "host": gateway["headers"]["host"],
            "x-forwarded-for": "140.82.115.10",
            "x-forwarded-proto": "https",
            "content-length": str(len(body)),
            **{k.lower(): v for k, v in headers.items()},
        }
        gateway["requestContext"]["http"]["sourceIp"] = "140.82.115.10"
        gateway["requestContext"]["http"]["userAgent"] = headers.get("User-Agent", "curl/8.5.0")
        gateway["body"] = body.decode()
        response: dict[str, Any] = api.handler(gateway, FakeContext())
        return response

    def run_turns(self) -> None:
        from agentkit.aws.handlers import turn

        while self.dispatcher.payloads:
            turn.handler(self.dispatcher.payloads.pop(0), FakeContext())

    def sessions(self) -> list[Any]:
        from agentkit.aws.handlers._common import run

        return list(run(self.host.store.list_sessions(None, limit=50)).items)


@pytest.fixture
def standin() -> Iterator[GitHubStandIn]:
    server = GitHubStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def github_stack(
    tmp_path: Path, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, standin
) -> Iterator[GitHubStack]:
    from agentkit.aws.clients import client as make_client
    from agentkit.aws.handlers import _common, api
    from agentkit.project.build import build_project
    from agentkit.project.bundle import AgentBundle
    from agentkit.store.dynamodb import DynamoDBSettings, create_tables

    project = tmp_path / "project"
    for rel, text in FILES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    build_dir = tmp_path / "build"
    build_project(project, build_dir)
    suffix = uuid.uuid4().hex[:10]
    settings = AwsSettings(
        sessions_table=f"gh{suffix}-sessions",
        events_table=f"gh{suffix}-events",
        dynamodb_endpoint=dynamodb_endpoint,
        endpoint_url=dynamodb_endpoint,
        schedule_group=f"gh{suffix}",
        turn_function="agentkit-turn",
        bearer_token="dev-token",
        build_dir=build_dir,
        stream_window=1.0,
    )

    def clients(service: str) -> Any:
        return make_client(service, settings)

    create_tables(
        clients("dynamodb"),
        DynamoDBSettings(
            endpoint_url=dynamodb_endpoint,
            sessions_table=settings.sessions_table,
            events_table=settings.events_table,
        ),
    )
    secrets = clients("secretsmanager")
    secrets.create_secret(Name=f"gh{suffix}/webhook", SecretString=SECRET)
    secrets.create_secret(Name=f"gh{suffix}/token", SecretString=TOKEN)
    for var in ("GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN"):
        monkeypatch.setenv(var, "")  # recorded, so teardown restores what was there
        monkeypatch.delenv(var)
    monkeypatch.setenv("AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME", f"gh{suffix}/webhook")
    monkeypatch.setenv("AGENTKIT_GITHUB_TOKEN_NAME", f"gh{suffix}/token")
    monkeypatch.setenv("GITHUB_API_URL", standin.url)
    model = ScriptedModel([])
    dispatcher = CapturingDispatcher()
    host = AwsHost(
        settings,
        bundle=AgentBundle.load_built(build_dir),
        clients=clients,
        dispatcher=dispatcher,
        runtime_options={"model_resolver": lambda _id: model, "lease_ttl": 30.0},
    )
    _common.use_host(host)
    api.reset()
    try:
        yield GitHubStack(host, dispatcher, model)
    finally:
        _common.use_host(None)
        api.reset()
        for var in ("GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN"):
            os.environ.pop(var, None)
        for table in (settings.sessions_table, settings.events_table):
            with contextlib.suppress(Exception):
                clients("dynamodb").delete_table(TableName=table)


def run_events(stack: GitHubStack, session_id: str) -> list[Any]:
    from agentkit.aws.handlers._common import run

    return list(run(stack.host.store.read(session_id)))


def stream_records(stack: GitHubStack) -> list[dict[str, Any]]:
    host = stack.host
    ddb = host.client("dynamodb")
    arn = ddb.describe_table(TableName=host.settings.events_table)["Table"]["LatestStreamArn"]
    streams = host.client("dynamodbstreams")
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records.extend(page["Records"])
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return records


def test_signed_delivery_to_reply_comment_on_lambda(github_stack: GitHubStack, standin) -> None:
    from agentkit.aws.handlers import hooks

    payload = pull_request("opened", 12, title="Tidy the docs", head="d" * 40)
    for secret in (None, "not the secret"):
        refused = github_stack.api("pull_request", payload, secret)
        assert refused["statusCode"] == 401, refused
    assert github_stack.sessions() == []
    assert not github_stack.dispatcher.payloads

    github_stack.model._steps.append(Step.text("Reviewed: looks fine."))
    accepted = github_stack.api("pull_request", payload, SECRET, delivery_id="lambda-1")
    assert accepted["statusCode"] == 200, accepted
    body = json.loads(accepted["body"])
    assert body["key"] == "pr:octo/widgets#12"
    # The webhook request only accepted the message: nothing was posted yet.
    assert standin.requests == []
    again = github_stack.api("pull_request", payload, SECRET, delivery_id="lambda-1")
    assert json.loads(again["body"]) == {"ok": True, "duplicate": True}
    assert len(github_stack.dispatcher.payloads) == 1
    github_stack.run_turns()

    batch = {"Records": stream_records(github_stack)}
    assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
    assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}  # redelivered
    [comment] = standin.comments(12)
    assert comment.headers["authorization"] == f"Bearer {TOKEN}"
    assert comment.body["body"].startswith("Reviewed: looks fine.")
    [session] = github_stack.sessions()
    assert session.principal == "channel:github"
    assert session.continuation_key == "pr:octo/widgets#12"


def test_deployed_channel_without_a_secret_refuses(
    github_stack: GitHubStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentkit.aws.handlers import api

    monkeypatch.setenv("AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME", "")
    api.reset()
    github_stack.host._app = None
    payload = pull_request("opened", 13, title="Tidy", head="e" * 40)
    response = github_stack.api("pull_request", payload, None)
    assert response["statusCode"] == 503, response
    assert json.loads(response["body"])["error"] == "channel_misconfigured"
    assert github_stack.sessions() == []


def test_approvals_on_lambda_post_only_from_the_hooks_function(
    github_stack: GitHubStack, standin: GitHubStandIn
) -> None:
    """The webhook request resolves an `/approve` with one short read of the PR head and
    one reaction; every comment (the request, the notice of a voided approval, the reply)
    is posted by HooksFunction from the events stream."""
    from agentkit.aws.handlers import hooks

    head = "d" * 40
    standin.heads["octo/widgets#14"] = head
    github_stack.model._steps.extend(
        [
            Step.tool_calls(call("merge_pr", {"method": "squash"}, id="call_merge_1")),
            Step.text("Left it unmerged."),
        ]
    )
    payload = pull_request("opened", 14, title="Merge when green", head=head)
    assert github_stack.api("pull_request", payload, SECRET)["statusCode"] == 200
    github_stack.run_turns()  # parks on the approval
    assert standin.requests == []
    assert hooks.handler({"Records": stream_records(github_stack)}, FakeContext()) == {
        "batchItemFailures": []
    }
    [ask] = standin.comments(14)
    assert "/approve call_merge_1" in ask.body["body"] and head in ask.body["body"]

    # The head moved and GitHub's API fails right now: one read, tried once, and nothing is
    # decided (the comment gets a confused reaction); nothing is posted in the request.
    standin.heads["octo/widgets#14"] = "f" * 40
    standin.fail_reads = 100
    before = len(standin.requests)
    command = issue_comment(14, "/approve call_merge_1", login="octo-lead", association="OWNER")
    answer = github_stack.api("issue_comment", command, SECRET)
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"])["undecided"] == "head unreadable"
    during = standin.requests[before:]
    reactions = f"/repos/octo/widgets/issues/comments/{command['comment']['id']}/reactions"
    assert [(r.method, r.path) for r in during] == [
        ("GET", "/repos/octo/widgets/pulls/14"),
        ("POST", reactions),
    ]
    assert during[-1].body["content"] == "confused"
    # GitHub answers again; the approver comments again: the head moved, so it is denied.
    standin.fail_reads = 0
    again = issue_comment(14, "/approve call_merge_1", login="octo-lead", association="OWNER")
    answer = github_stack.api("issue_comment", again, SECRET)
    assert json.loads(answer["body"])["decision"] == "deny"
    # HooksFunction explains the denial, then posts the turn's reply.
    github_stack.run_turns()
    batch = {"Records": stream_records(github_stack)}
    assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
    assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}  # redelivered
    texts = [c.body["body"] for c in standin.comments(14)]
    assert len(texts) == 3, texts
    assert "Nothing ran" in texts[1] and "moved to " + "f" * 40 in texts[1]
    assert texts[2].startswith("Left it unmerged.")


def test_a_comment_on_a_busy_pr_queues_on_lambda(
    github_stack: GitHubStack, standin: GitHubStandIn
) -> None:
    """The pack's `queue` strategy across functions: a comment that arrives while the PR's
    turn is still waiting for TurnFunction is queued, then run after it; both answered."""
    from agentkit.aws.handlers import hooks

    github_stack.model._steps.extend([Step.text("First look: fine."), Step.text("Docs too.")])
    payload = pull_request("opened", 15, title="Tidy", head="a" * 40)
    opened = github_stack.api("pull_request", payload, SECRET)
    comment = issue_comment(15, "Please also check docs", login="reviewer")
    queued = github_stack.api("issue_comment", comment, SECRET)
    assert json.loads(queued["body"])["sessionId"] == json.loads(opened["body"])["sessionId"]
    assert len(github_stack.dispatcher.payloads) == 1  # the second waits for the first
    github_stack.run_turns()  # runs the first turn, whose end dispatches the queued one
    assert hooks.handler({"Records": stream_records(github_stack)}, FakeContext()) == {
        "batchItemFailures": []
    }
    texts = [c.body["body"] for c in standin.comments(15)]
    assert [t.split("\n")[0] for t in texts] == ["First look: fine.", "Docs too."]
    [session] = github_stack.sessions()
    events = run_events(github_stack, session.id)
    kinds = [str(e.type) for e in events]
    assert kinds.count("message.queued") == 1 and kinds.count("turn.completed") == 2
    assert kinds.index("message.queued") < kinds.index("turn.completed")


def test_a_custom_channel_on_lambda(github_stack: GitHubStack, standin: GitHubStandIn) -> None:
    from agentkit.aws.handlers import hooks

    bearer = {"Content-Type": "application/json", "Authorization": "Bearer dev-token"}
    form = json.dumps({"ticket": "7", "text": "The printer is on fire"}).encode()
    # The agent's auth chain applies (no bearer: 401), then the body's model (400).
    refused = github_stack.post("/v1/channels/forms", form, {"Content-Type": "application/json"})
    assert refused["statusCode"] == 401, refused
    bad = github_stack.post("/v1/channels/forms", b'{"ticket": ""}', bearer)
    assert bad["statusCode"] == 400, bad
    assert json.loads(bad["body"])["error"] == "bad_request"
    assert "ticket" in json.loads(bad["body"])["message"]
    assert github_stack.sessions() == []

    github_stack.model._steps.extend(
        [Step.text("Call the fire brigade."), Step.text("Still on it."), Step.text("Triaged.")]
    )
    first = github_stack.post("/v1/channels/forms", form, bearer)
    assert first["statusCode"] == 200, first
    sid = json.loads(first["body"])["sessionId"]
    github_stack.run_turns()
    again = json.dumps({"ticket": "7", "text": "Any news?"}).encode()
    second = github_stack.post("/v1/channels/forms/", again, bearer)
    assert json.loads(second["body"])["sessionId"] == sid  # the key continues its session
    github_stack.run_turns()
    task = github_stack.post("/v1/channels/forms/triage", form, bearer)
    assert task["statusCode"] == 202, task
    task_id = json.loads(task["body"])["sessionId"]
    github_stack.run_turns()

    assert standin.requests == []  # nothing was reported from the API or turn functions
    batch = {"Records": stream_records(github_stack)}
    assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
    reported = sorted(c.body["body"] for c in standin.comments(1))
    # The sessions are the admitted caller's (the bearer token's principal), not the channel's.
    caller = bearer_principal_id("dev-token")
    assert reported == sorted(
        [
            f"ticket:7 {caller}: Call the fire brigade.",
            f"ticket:7 {caller}: Still on it.",
            f"{task_id} {caller}: Triaged.",
        ]
    )
    sessions = {s.id: s for s in github_stack.sessions()}
    assert sessions[sid].continuation_key == "ticket:7" and sessions[task_id].mode == "task"
