"""Each handler with the sample events of events/ (what `sam local invoke -e` sends)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.aws.handlers import api, hooks, turn
from agentkit.models.scripted import Step
from tests.aws.conftest import FakeContext, Stack, load_event, script

ROOT = Path(__file__).resolve().parents[2]


def test_sample_stream_batch_reaches_the_hooks(aws_stack: Stack) -> None:
    result = hooks.handler(load_event("hooks/stream-batch.json"), FakeContext())
    assert result == {"batchItemFailures": []}
    calls = aws_stack.hook_calls()
    assert [(c["sessionId"], c["index"]) for c in calls] == [
        ("ses_EXAMPLEexample00000000", i) for i in range(4)
    ]
    assert calls[-1]["type"] == "turn.completed"


def test_unreadable_record_is_retried_with_everything_after_it(aws_stack: Stack) -> None:
    batch = load_event("hooks/stream-batch.json")
    broken = copy.deepcopy(batch)
    # an offloaded event whose chunks are missing: reading it fails
    broken["Records"][1]["dynamodb"]["NewImage"].update(
        {"blob": {"S": "b_missing"}, "chunks": {"N": "2"}, "bytes": {"N": "10"}}
    )
    result = hooks.handler(broken, FakeContext())
    sequences = [r["dynamodb"]["SequenceNumber"] for r in batch["Records"]]
    assert result == {"batchItemFailures": [{"itemIdentifier": s} for s in sequences[1:]]}
    assert [c["index"] for c in aws_stack.hook_calls()] == [0]


def test_hook_errors_never_fail_the_batch(
    aws_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the hook writes to a folder that does not exist: every call raises
    monkeypatch.setenv("AGENTKIT_TEST_HOOK_LOG", str(aws_stack.hook_log.parent / "no" / "x"))
    result = hooks.handler(load_event("hooks/stream-batch.json"), FakeContext())
    assert result == {"batchItemFailures": []}


def test_sample_turn_event_for_an_unknown_session_does_nothing(aws_stack: Stack) -> None:
    result = turn.handler(load_event("turn/run-turn.json"), FakeContext())
    assert result["ok"] is True
    assert aws_stack.model.remaining == 0


def test_malformed_turn_event_is_refused_without_raising(aws_stack: Stack) -> None:
    assert turn.handler({"sessionId": 3}, FakeContext())["ok"] is False


def test_sample_create_session_event_is_accepted(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("hi"))
    response = api.handler(load_event("api/create-session.json"), FakeContext())
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["ok"] is True and body["sessionId"].startswith("ses_")
    assert body["continuationToken"].startswith("http:")


# What the API function's cold start must never load: the local server, provider SDKs,
# and what only a turn (run by TurnFunction), a raw-schema tool input, the docs site or cron
# arithmetic (schedules and reminders, checked at build time and fired elsewhere) or a
# project's YAML frontmatter (read when it is built) needs.
LAZY_MODULES = (
    "uvicorn",
    "anthropic",
    "openai",
    "markdown_it",
    "jsonschema",
    "croniter",  # its dateutil and six come with botocore anyway
    "yaml",  # frontmatter is parsed when a project is built, never from the baked manifest
    "agentkit.engine.turn.loop",
    "agentkit.engine.tools.calls",
    "agentkit.engine.tools.builtins",
)


def test_importing_the_api_handler_loads_no_server_or_provider_sdk() -> None:
    code = (
        "import sys\n"
        "import agentkit.aws.handlers.api, agentkit.aws.handlers.turn\n"
        "import agentkit.aws.handlers.hooks, agentkit.aws.handlers.scheduler\n"
        f"bad = [m for m in {LAZY_MODULES!r} if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == ""


def test_answering_a_request_loads_no_server_or_provider_sdk(tmp_path: Path) -> None:
    """A cold start that builds the app and answers /v1/health and /v1/info (manifest
    included) stays free of them too."""
    from agentkit.project.build import build_project
    from tests.aws.conftest import write_agent

    build_project(write_agent(tmp_path / "p"), tmp_path / "build")
    code = (
        "import json, sys\n"
        "from agentkit.aws.handlers import api\n"
        "from tests.aws.conftest import FakeContext, load_event\n"
        "event = load_event('api/health.json')\n"
        "r = api.handler(event, FakeContext())\n"
        "assert r['statusCode'] == 200, r\n"
        "event['rawPath'] = event['requestContext']['http']['path'] = '/v1/info'\n"
        "r = api.handler(event, FakeContext())\n"
        "assert r['statusCode'] == 200, r\n"
        "assert json.loads(r['body'])['agent']['slug'], r\n"
        f"bad = [m for m in {LAZY_MODULES!r} if m in sys.modules]\n"
        "print('LOADED:' + ','.join(bad))\n"
    )
    env = dict(
        os.environ,
        AGENTKIT_SESSIONS_TABLE="s",
        AGENTKIT_EVENTS_TABLE="e",
        AGENTKIT_BUILD_DIR=str(tmp_path / "build"),
        AGENTKIT_BEARER_TOKEN="dev-token",
        AGENTKIT_TURN_FUNCTION="agentkit-turn",
        AWS_DEFAULT_REGION="us-east-1",
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert [x for x in out.stdout.splitlines() if x.startswith("LOADED:")] == ["LOADED:"]


def test_inline_dispatch_runs_the_turn_before_the_api_answers(aws_stack: Stack) -> None:
    """`sam local` has no async invoke: AGENTKIT_DISPATCH=inline runs the turn in place."""
    from dataclasses import replace

    from agentkit.aws.handlers import _common
    from agentkit.aws.host import AwsHost

    script(aws_stack, Step.text("inline"))
    inline = AwsHost(
        replace(aws_stack.settings, dispatch="inline"),
        bundle=aws_stack.host.bundle,
        clients=aws_stack.host.client,
        runtime_options={"model_resolver": lambda _id: aws_stack.model},
    )
    _common.use_host(inline)
    api.reset()
    body = json.loads(api.handler(load_event("api/create-session.json"), FakeContext())["body"])
    events = _common.run(inline.store.read(body["sessionId"]))
    assert "turn.completed" in [e.type for e in events]


def test_the_aws_host_offers_the_ports_its_routes_ask_for(aws_stack: Stack) -> None:
    from agentkit.ab.service import KeepsAbSnapshot
    from agentkit.evals.runs import ServesEvalRuns
    from agentkit.scheduling.reminders import KeepsReminders
    from agentkit.scheduling.schedules import DispatchesSchedules
    from agentkit.server.options import NamedHost

    host = aws_stack.host
    for port in (NamedHost, DispatchesSchedules, KeepsReminders, ServesEvalRuns, KeepsAbSnapshot):
        assert isinstance(host, port), port.__name__
    assert host.kind == "aws"
