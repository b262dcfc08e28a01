"""SnapStart hooks (`agentkit.aws.snapstart`), run the way the Lambda runtime runs them:
from `snapshot_restore_py`'s registries, around real API Gateway events through
ApiFunction and the moto DynamoDB server."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import snapshot_restore_py

from agentkit.aws import snapstart
from agentkit.aws.handlers import api
from agentkit.models.scripted import Step
from tests.aws.conftest import Stack, script
from tests.aws.test_flow import api_call, body_of

Registry = list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]


def run_hooks(registry: Registry) -> None:
    """What the runtime does with a registry: call each hook, in order."""
    for func, args, kwargs in registry:
        func(*args, **kwargs)


def before_snapshot() -> None:
    # The runtime runs before-snapshot hooks in reverse order of registration.
    run_hooks(list(reversed(snapshot_restore_py.get_before_snapshot())))


def after_restore() -> None:
    run_hooks(snapshot_restore_py.get_after_restore())


@pytest.fixture
def snapstart_init(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(snapstart.INIT_TYPE_VARIABLE, snapstart.SNAP_START)


def store_client(stack: Stack) -> Any:
    """The boto3 client the host's store is using right now (None before its first call)."""
    return stack.host.store._caller.client.built


def test_nothing_registers_outside_a_snapstart_init(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(snapstart.INIT_TYPE_VARIABLE, raising=False)
    primed: list[bool] = []
    assert snapstart.register(lambda: primed.append(True)) is False
    assert primed == []


def test_a_snapstart_init_registers_the_hooks_and_primes_the_app(
    aws_stack: Stack, snapstart_init: None
) -> None:
    api.reset()
    assert snapstart.register(api._mangum) is True
    assert snapstart.register(api._mangum) is True  # a second handler module: no duplicates
    after = [f for f, _, _ in snapshot_restore_py.get_after_restore()]
    before = [f for f, _, _ in snapshot_restore_py.get_before_snapshot()]
    assert after.count(snapstart.after_restore) == 1
    assert before.count(snapstart.before_snapshot) == 1
    assert api._adapter is not None  # the app was built during init, into the snapshot


def test_restored_environments_draw_different_random_numbers(
    aws_stack: Stack, snapstart_init: None
) -> None:
    snapstart.register()
    random.seed(1234)
    snapshot = random.getstate()  # what every environment restored from one snapshot has
    without_hook = [random.random() for _ in range(4)]

    random.setstate(snapshot)
    after_restore()
    first = [random.random() for _ in range(4)]
    random.setstate(snapshot)
    after_restore()
    second = [random.random() for _ in range(4)]

    assert first != without_hook
    assert second != without_hook
    assert first != second


def test_clients_are_dropped_before_the_snapshot_and_rebuilt_after_restore(
    aws_stack: Stack, snapstart_init: None
) -> None:
    snapstart.register()
    script(aws_stack, Step.text("Before the snapshot."))
    created = api_call("api/create-session.json")
    assert created["statusCode"] == 200, created
    session_id = body_of(created)["sessionId"]
    old = store_client(aws_stack)
    assert old is not None

    before_snapshot()
    assert store_client(aws_stack) is None  # no client (nor its connections) is snapshotted

    after_restore()
    assert store_client(aws_stack) is None
    # The next request builds a new client and works against the DynamoDB server.
    aws_stack.run_turns()
    events = api_call(
        "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
    )
    assert events["statusCode"] == 200, events
    assert '"turn.completed"' in events["body"]
    new = store_client(aws_stack)
    assert new is not None and new is not old


def test_renew_clients_counts_what_it_dropped(aws_stack: Stack) -> None:
    assert snapstart.renew_clients() == 0  # nothing built yet: the host's clients are lazy
    listed = api_call("api/stream.json", path="/v1/sessions", query="")
    assert listed["statusCode"] == 200, listed
    assert snapstart.renew_clients() == 1  # the store's DynamoDB client
    assert store_client(aws_stack) is None


IMPORT_UNDER_SNAPSTART = """
import json, sys
import snapshot_restore_py
from agentkit.aws.handlers import _common, api
from agentkit.aws import snapstart
built = _common.current_host()
registered = [f.__name__ for f, _, _ in snapshot_restore_py.get_after_restore()]
print(json.dumps({
    "registered": registered,
    "host": built is not None,
    "app": api._adapter is not None,
}))
"""


def test_importing_the_api_handler_under_a_snapstart_init_primes_it(aws_stack: Stack) -> None:
    """What Lambda does at a SnapStart init: import the handler module. The hooks are
    registered and the host and app built then, so they are in the snapshot."""
    s = aws_stack.settings
    env = {
        **os.environ,
        snapstart.INIT_TYPE_VARIABLE: snapstart.SNAP_START,
        "AGENTKIT_SESSIONS_TABLE": s.sessions_table,
        "AGENTKIT_EVENTS_TABLE": s.events_table,
        "AGENTKIT_DYNAMODB_ENDPOINT": aws_stack.endpoint,
        "AGENTKIT_BUILD_DIR": str(s.build_dir),
        "AGENTKIT_BEARER_TOKEN": "dev-token",
        "AGENTKIT_TURN_FUNCTION": "agentkit-turn:live",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
    }
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_UNDER_SNAPSTART],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state == {"registered": ["after_restore"], "host": True, "app": True}
