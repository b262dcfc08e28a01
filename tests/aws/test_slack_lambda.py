"""The Slack channel on Lambda: API Gateway events into ApiFunction (answered at once), the
turn in TurnFunction, the reply and the approval buttons posted by HooksFunction from the
events stream, credentials read from Secrets Manager (all on the moto server), the Web API
calls received by a Slack stand-in on loopback through the real slack_sdk client."""

from __future__ import annotations

import contextlib
import json
import os
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.host import AwsHost
from agentkit.aws.settings import AwsSettings
from agentkit.models.scripted import ScriptedModel, Step, call
from tests.aws.conftest import CapturingDispatcher, FakeContext, load_event
from tests.aws.test_github_lambda import stream_records
from tests.channels.slack_payloads import (
    CHANNEL,
    TEAM,
    block_action,
    envelope,
    event_request,
    interaction_request,
    mention,
    url_verification,
)
from tests.channels.slack_standin import SlackStandIn

SECRET = "slack-signing-secret-from-secrets-manager"
TOKEN = "xoxb-token-from-secrets-manager"
FILES = {
    "agent/agent.py": "from agentkit import define_agent\n\nagent = define_agent(model='test')\n",
    "agent/instructions.md": "You are the helpdesk.\n",
    "agent/channels/slack.py": """
        from agentkit.channels.slack import slack_channel

        channel = slack_channel(approvers=["U0LEAD"])
    """,
    "agent/tools/restart_service.py": """
        import os

        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class RestartInput(BaseModel):
            service: str = "billing"


        @define_tool(description="Restart a service.", needs_approval=True)
        async def restart_service(input: RestartInput, ctx: ToolContext) -> dict:
            with open(os.environ["RESTART_LOG"], "a", encoding="utf-8") as f:
                f.write(input.service + "\\n")
            return {"restarted": input.service}
    """,
}


class SlackStack:
    def __init__(self, host: AwsHost, dispatcher: CapturingDispatcher, model: ScriptedModel):
        self.host, self.dispatcher, self.model = host, dispatcher, model

    def _gateway(self, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        from agentkit.aws.handlers import api

        gateway = load_event("api/create-session.json")
        gateway["rawPath"] = gateway["requestContext"]["http"]["path"] = path
        gateway["headers"] = {
            "host": gateway["headers"]["host"],
            "x-forwarded-for": "3.80.10.20",
            "x-forwarded-proto": "https",
            "content-length": str(len(body)),
            **{k.lower(): v for k, v in headers.items()},
        }
        gateway["requestContext"]["http"]["sourceIp"] = "3.80.10.20"
        gateway["requestContext"]["http"]["userAgent"] = headers["User-Agent"]
        gateway["body"] = body.decode()
        response: dict[str, Any] = api.handler(gateway, FakeContext())
        return response

    def event(self, payload: dict, secret: str | None = SECRET, **kw: Any) -> dict[str, Any]:
        body, headers = event_request(payload, secret, **kw)
        return self._gateway("/v1/channels/slack/events", body, headers)

    def click(self, payload: dict, secret: str | None = SECRET) -> dict[str, Any]:
        body, headers = interaction_request(payload, secret)
        return self._gateway("/v1/channels/slack/interactions", body, headers)

    def run_turns(self) -> None:
        from agentkit.aws.handlers import turn

        while self.dispatcher.payloads:
            turn.handler(self.dispatcher.payloads.pop(0), FakeContext())

    def deliver(self) -> None:
        """HooksFunction over everything in the stream, twice (batches are redelivered)."""
        from agentkit.aws.handlers import hooks

        batch = {"Records": stream_records(self)}  # type: ignore[arg-type]
        assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
        assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}

    def sessions(self) -> list[Any]:
        from agentkit.aws.handlers._common import run

        return list(run(self.host.store.list_sessions(None, limit=50)).items)


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    # It offers the streaming methods; on Lambda the pack still posts once (see below).
    server = SlackStandIn(streams=True).start()
    yield server
    server.stop()


@pytest.fixture
def slack_stack(
    tmp_path: Path, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, standin
) -> Iterator[SlackStack]:
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
        sessions_table=f"sl{suffix}-sessions",
        events_table=f"sl{suffix}-events",
        dynamodb_endpoint=dynamodb_endpoint,
        endpoint_url=dynamodb_endpoint,
        schedule_group=f"sl{suffix}",
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
    secrets.create_secret(Name=f"sl{suffix}/signing", SecretString=SECRET)
    secrets.create_secret(Name=f"sl{suffix}/bot", SecretString=TOKEN)
    for var in ("SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN"):
        monkeypatch.setenv(var, "")  # recorded, so teardown restores what was there
        monkeypatch.delenv(var)
    monkeypatch.setenv("AGENTKIT_SLACK_SIGNING_SECRET_NAME", f"sl{suffix}/signing")
    monkeypatch.setenv("AGENTKIT_SLACK_BOT_TOKEN_NAME", f"sl{suffix}/bot")
    monkeypatch.setenv("SLACK_API_URL", standin.url)
    monkeypatch.setenv("RESTART_LOG", str(tmp_path / "restarts.log"))
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
        yield SlackStack(host, dispatcher, model)
    finally:
        _common.use_host(None)
        api.reset()
        for var in ("SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN"):
            os.environ.pop(var, None)
        for table in (settings.sessions_table, settings.events_table):
            with contextlib.suppress(Exception):
                clients("dynamodb").delete_table(TableName=table)


def test_mention_to_thread_reply_on_lambda(slack_stack: SlackStack, standin) -> None:
    ts = "1700000100.000100"
    payload = envelope(mention("is the billing service up?", ts), event_id="Ev0LAMBDA1")
    for refused in (
        slack_stack.event(payload, None),
        slack_stack.event(payload, "not the secret"),
        slack_stack.event(payload, timestamp=int(time.time()) - 600),
    ):
        assert refused["statusCode"] == 401, refused
    assert slack_stack.sessions() == []
    assert not slack_stack.dispatcher.payloads
    challenge = slack_stack.event(url_verification("c-123"))
    assert challenge["statusCode"] == 200 and json.loads(challenge["body"]) == {
        "challenge": "c-123"
    }

    slack_stack.model._steps.append(Step.text("Billing is **up**."))
    accepted = slack_stack.event(payload)
    assert accepted["statusCode"] == 200, accepted
    key = f"slack:{TEAM}:{CHANNEL}:{ts}"
    assert json.loads(accepted["body"])["key"] == key
    # The request only recorded the message: the turn waits for TurnFunction.
    assert standin.calls == []
    retried = slack_stack.event(payload, retry=1)
    assert json.loads(retried["body"]) == {"ok": True, "duplicate": True}
    assert len(slack_stack.dispatcher.payloads) == 1
    slack_stack.run_turns()
    slack_stack.deliver()
    [post] = standin.posts()
    assert post.headers["authorization"] == f"Bearer {TOKEN}"
    assert post.args["thread_ts"] == ts and post.args["channel"] == CHANNEL
    assert post.args["text"] == "Billing is *up*."
    # HooksFunction saw the text deltas too, but in batches after the fact (another
    # invocation may hold the rest): nothing is streamed, the reply is one post.
    assert "message.appended" in json.dumps(stream_records(slack_stack), default=str)
    assert not [c for c in standin.calls if c.method.endswith("Stream")]
    [session] = slack_stack.sessions()
    assert session.principal == "channel:slack" and session.continuation_key == key


def test_approval_click_on_lambda(slack_stack: SlackStack, standin, tmp_path: Path) -> None:
    ts = "1700000200.000200"
    slack_stack.model._steps.extend(
        [
            Step.tool_calls(call("restart_service", {"service": "billing"}, id="c-1")),
            Step.text("Restarted billing."),
        ]
    )
    accepted = slack_stack.event(envelope(mention("restart billing", ts)))
    sid = json.loads(accepted["body"])["sessionId"]
    slack_stack.run_turns()  # parks on the approval
    slack_stack.deliver()
    [ask] = [p for p in standin.posts() if "blocks" in p.args]
    buttons = {e["action_id"]: e["value"] for e in ask.args["blocks"][-1]["elements"]}
    assert json.loads(buttons["agentkit_approve"]) == {
        "s": sid,
        "c": "c-1",
        "t": "restart_service",
    }

    def press(user: str) -> dict[str, Any]:
        return slack_stack.click(
            block_action(
                "agentkit_approve",
                buttons["agentkit_approve"],
                user=user,
                message_ts="1800000000.000009",
                thread_ts=ts,
            )
        )

    stranger = press("U0STRANGER")
    assert stranger["statusCode"] == 200, stranger
    assert json.loads(stranger["body"]) == {"ok": True, "refused": "U0STRANGER"}
    assert not slack_stack.dispatcher.payloads
    approved = press("U0LEAD")
    assert json.loads(approved["body"]) == {"ok": True, "callId": "c-1", "decision": "approve"}
    [update] = standin.of("chat.update")
    assert "Approved by <@U0LEAD>" in update.args["text"]
    assert json.loads(press("U0LEAD")["body"]) == {"ok": True, "stale": "c-1"}
    slack_stack.run_turns()
    slack_stack.deliver()
    assert (tmp_path / "restarts.log").read_text().splitlines() == ["billing"]
    assert [p.args["text"] for p in standin.posts() if "blocks" not in p.args] == [
        "Restarted billing."
    ]
