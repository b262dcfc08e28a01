"""The AWS functions in-process, against the moto server on loopback.

`aws_stack` builds a small agent project (a reminder tool, a tool that needs approval, a
hook writing what it sees to a file, a markdown schedule), compiles it with `agentkit build`
as `sam build` does, creates the store's tables and the stack's schedule group on the moto
server, and installs an `AwsHost` for the handlers. Lambda's asynchronous invoke cannot run
on moto, so the host's dispatcher captures the payloads; `stack.run_turns()` hands them to
TurnFunction's handler, as Lambda would.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.dispatchers import turn_payload
from agentkit.aws.host import AwsHost
from agentkit.aws.settings import AwsSettings
from agentkit.models.scripted import ScriptedModel, Step

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
TOKEN = "dev-token"
TARGET_ARN = "arn:aws:lambda:us-east-1:123456789012:function:agentkit-scheduler"
ROLE_ARN = "arn:aws:iam::123456789012:role/agentkit-scheduler-invoke"
API_DOMAIN = "abcdef1234.execute-api.us-east-1.amazonaws.com"


def load_event(name: str) -> dict[str, Any]:
    """A sample event from events/ (the files `sam local invoke -e` uses)."""
    return json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))


def api_event(method: str, path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The HTTP API (payload 2.0) event API Gateway would send ApiFunction for a request."""
    event = copy.deepcopy(load_event("api/mcp-initialize.json"))
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["headers"] = {k.lower(): v for k, v in headers.items()}
    event["body"] = body.decode() if body else None
    if not body:
        event.pop("body")
    return event


async def invoke_api(request: Any) -> tuple[int, dict[str, str] | None, bytes]:
    """One ApiFunction invocation (in a worker thread, as Lambda runs it) for an httpx or
    httpx2 request: the status, headers and body of its answer, for either library's
    `Response`. The two clients (A2A's and MCP's) each bring their own HTTP library."""
    from agentkit.aws.handlers import api

    body = await request.aread()
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    event = api_event(request.method, request.url.path, headers, body)
    result = await asyncio.to_thread(api.handler, event, FakeContext())
    raw = result.get("body") or ""
    data = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode()
    return result["statusCode"], result.get("headers"), data


@dataclass
class FakeContext:
    """The attributes of a Lambda context object the Powertools wrappers read."""

    function_name: str = "agentkit-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:agentkit-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 900_000  # TurnFunction's timeout: no turn here needs to continue


class CapturingDispatcher:
    """Records the payloads the Lambda dispatcher would send to TurnFunction."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.payloads.append(json.loads(turn_payload(session_id, turn_id)))

    async def dispatch_eval(self, run_id: str) -> None:
        from agentkit.aws.eval_runs import eval_run_payload

        self.payloads.append(json.loads(eval_run_payload(run_id)))


AGENT_FILES = {
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(model="test")
    """,
    "agent/instructions.md": "You are a test agent.\n",
    "agent/tools/remind_me.py": """
        from pydantic import BaseModel, Field

        from agentkit import ToolContext, define_tool


        class RemindInput(BaseModel):
            delay: str = Field(description="such as 20m")
            prompt: str = Field(min_length=1)


        @define_tool(description="Schedule a one-time reminder in this conversation.")
        async def remind_me(input: RemindInput, ctx: ToolContext) -> dict:
            session = ctx.session
            reminder = await ctx.host.reminders.create(
                purpose="user_follow_up",
                channel_id=session.channel_id,
                continuation_token=session.continuation_key or session.id,
                delay=input.delay,
                prompt=input.prompt,
            )
            return {"reminderId": reminder.id, "nextFireAt": reminder.next_fire_at}
    """,
    "agent/tools/deploy.py": """
        from pydantic import BaseModel

        from agentkit import ToolContext, define_tool


        class DeployInput(BaseModel):
            env: str


        @define_tool(description="Deploy to an environment.", needs_approval=True)
        async def deploy(input: DeployInput, ctx: ToolContext) -> dict:
            return {"deployed": input.env}
    """,
    "agent/hooks/observe.py": """
        import json
        import os

        from agentkit import HookContext, define_hook


        def on_any(event, ctx: HookContext) -> None:
            with open(os.environ["AGENTKIT_TEST_HOOK_LOG"], "a", encoding="utf-8") as f:
                f.write(json.dumps({"type": event.type, "sessionId": event.session_id,
                                    "index": event.index, "channel": ctx.session.channel_id})
                        + "\\n")


        hook = define_hook(events={"*": on_any})
    """,
    "agent/schedules/heartbeat.md": """
        ---
        cron: "0 9 * * 1-5"
        ---

        Summarize what happened today.
    """,
}


def write_agent(root: Path) -> Path:
    for rel, text in AGENT_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@dataclass
class Stack:
    """One deployed stack, in-process: settings, host, captured turns, hook log."""

    settings: AwsSettings
    host: AwsHost
    dispatcher: CapturingDispatcher
    model: ScriptedModel
    hook_log: Path
    endpoint: str

    def client(self, service: str) -> Any:
        return self.host.client(service)

    def run_turns(self) -> list[dict[str, Any]]:
        """Deliver every captured async invoke to TurnFunction's handler (as Lambda does)."""
        from agentkit.aws.handlers import turn

        results = []
        while self.dispatcher.payloads:
            payload = self.dispatcher.payloads.pop(0)
            results.append(turn.handler(payload, FakeContext()))
        return results

    def hook_calls(self) -> list[dict[str, Any]]:
        if not self.hook_log.exists():
            return []
        return [json.loads(line) for line in self.hook_log.read_text().splitlines()]

    def stream_records(self, after: str | None = None) -> list[dict[str, Any]]:
        """The events table's stream, read through the DynamoDB Streams API, shaped as
        the records Lambda hands HooksFunction."""
        ddb = self.client("dynamodb")
        arn = ddb.describe_table(TableName=self.settings.events_table)["Table"]["LatestStreamArn"]
        streams = self.client("dynamodbstreams")
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
        for record in records:
            record["eventSourceARN"] = arn
        return records


@pytest.fixture
def aws_stack(
    tmp_path: Path, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Stack]:
    from agentkit.aws.clients import client as make_client
    from agentkit.aws.handlers import _common, api
    from agentkit.project.build import build_project
    from agentkit.project.bundle import AgentBundle
    from agentkit.store.dynamodb import DynamoDBSettings, create_tables

    project = write_agent(tmp_path / "project")
    build_dir = tmp_path / "build"
    build_project(project, build_dir)
    bundle = AgentBundle.load_built(build_dir)

    suffix = uuid.uuid4().hex[:10]
    settings = AwsSettings(
        sessions_table=f"aws{suffix}-sessions",
        events_table=f"aws{suffix}-events",
        region="us-east-1",
        dynamodb_endpoint=dynamodb_endpoint,
        endpoint_url=dynamodb_endpoint,
        schedule_group=f"stack{suffix}",
        scheduler_target_arn=TARGET_ARN,
        scheduler_role_arn=ROLE_ARN,
        turn_function="agentkit-turn",
        bearer_token=TOKEN,
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
    clients("scheduler").create_schedule_group(Name=settings.schedule_group)
    hook_log = tmp_path / "hooks.ndjson"
    monkeypatch.setenv("AGENTKIT_TEST_HOOK_LOG", str(hook_log))

    model = ScriptedModel([])
    dispatcher = CapturingDispatcher()
    host = AwsHost(
        settings,
        bundle=bundle,
        clients=clients,
        dispatcher=dispatcher,
        runtime_options={"model_resolver": lambda _id: model, "lease_ttl": 30.0},
    )
    _common.use_host(host)
    api.reset()
    try:
        yield Stack(settings, host, dispatcher, model, hook_log, dynamodb_endpoint)
    finally:
        _common.use_host(None)
        api.reset()
        for table in (settings.sessions_table, settings.events_table):
            with contextlib.suppress(Exception):  # teardown only
                clients("dynamodb").delete_table(TableName=table)


def script(stack: Stack, *steps: Step) -> None:
    """Queue the model's next replies."""
    stack.model._steps.extend(steps)
