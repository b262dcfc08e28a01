"""Session workspaces in S3 (the moto server's S3, the one the DynamoDB tests use).

The adapter alone: hydrate, write back what changed, links never followed, the size cap.
Then the deployed path: ApiFunction uploads a message's `workspaceFiles`, TurnFunction (a
host of its own, as another Lambda container would be, with its own /tmp) runs an
agent-execution tool on them, and what the tool wrote reaches the next turn's container.
"""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.workspace import S3Workspaces
from tests.aws.conftest import FakeContext, Stack, load_event

SESSION = "ses_" + "a" * 22


def objects(client: Any, bucket: str, prefix: str = "") -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
            out[item["Key"]] = body
    return out


@pytest.fixture
def store(s3_client: Any, s3_bucket: str) -> S3Workspaces:
    return S3Workspaces(s3_client, s3_bucket, max_bytes=10_000)


def test_per_send_files_reach_a_fresh_folder(store: S3Workspaces, tmp_path: Path) -> None:
    store.upload_files(SESSION, {"notes/a.txt": "alpha", "b.md": "beta"})
    local = tmp_path / "ws"
    (local / "stale").mkdir(parents=True)
    (local / "stale" / "old.txt").write_text("from another session")
    snapshot = store.hydrate(SESSION, local)
    assert (local / "notes" / "a.txt").read_text() == "alpha"
    assert (local / "b.md").read_text() == "beta"
    assert not (local / "stale").exists()  # the local copy is exactly the bucket's
    assert set(snapshot.files) == {"notes/a.txt", "b.md"}


def test_write_back_uploads_changes_and_deletes_removed_files(
    store: S3Workspaces, s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    store.upload_files(SESSION, {"keep.txt": "same", "edit.txt": "v1", "gone.txt": "bye"})
    local = tmp_path / "ws"
    before = store.hydrate(SESSION, local)
    (local / "edit.txt").write_text("v2")
    (local / "gone.txt").unlink()
    (local / "new" / "deep").mkdir(parents=True)
    (local / "new" / "deep" / "file.txt").write_text("fresh")
    report = store.write_back(SESSION, local, before)
    assert report.uploaded == ["edit.txt", "new/deep/file.txt"]
    assert report.deleted == ["gone.txt"]
    prefix = store.prefix(SESSION)
    assert objects(s3_client, s3_bucket, prefix) == {
        f"{prefix}keep.txt": b"same",
        f"{prefix}edit.txt": b"v2",
        f"{prefix}new/deep/file.txt": b"fresh",
    }


def test_sessions_do_not_share_a_prefix(store: S3Workspaces, tmp_path: Path) -> None:
    other = "ses_" + "b" * 22
    store.upload_files(SESSION, {"mine.txt": "secret"})
    store.hydrate(other, tmp_path / "other")
    assert list((tmp_path / "other").iterdir()) == []


def test_links_and_special_files_are_never_uploaded(
    store: S3Workspaces, s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    secret = tmp_path / "function-code.py"
    secret.write_text("AWS_SECRET=do-not-upload")
    local = tmp_path / "ws"
    before = store.hydrate(SESSION, local)
    (local / "link.txt").symlink_to(secret)
    (local / "linked-dir").symlink_to(tmp_path)
    os.mkfifo(local / "pipe")
    (local / "real.txt").write_text("ok")
    report = store.write_back(SESSION, local, before)
    assert report.uploaded == ["real.txt"]
    stored = objects(s3_client, s3_bucket)
    assert list(stored) == [store.key(SESSION, "real.txt")]
    assert all(b"do-not-upload" not in body for body in stored.values())


def test_changes_over_the_cap_are_not_saved(
    store: S3Workspaces, s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    local = tmp_path / "ws"
    before = store.hydrate(SESSION, local)
    (local / "a-small.txt").write_text("x" * 4_000)
    (local / "b-huge.bin").write_bytes(b"y" * 7_000)  # 4 000 + 7 000 > the 10 000 cap
    (local / "c-small.txt").write_text("z" * 4_000)
    report = store.write_back(SESSION, local, before)
    assert report.uploaded == ["a-small.txt", "c-small.txt"]
    assert report.skipped == ["b-huge.bin"]
    assert set(objects(s3_client, s3_bucket)) == {
        store.key(SESSION, "a-small.txt"),
        store.key(SESSION, "c-small.txt"),
    }


def test_objects_with_unusable_names_are_not_hydrated(
    store: S3Workspaces, s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    # Only the stack's roles write the bucket, but a key is still never a way out.
    s3_client.put_object(Bucket=s3_bucket, Key=f"{store.prefix(SESSION)}../escape.txt", Body=b"x")
    s3_client.put_object(Bucket=s3_bucket, Key=f"{store.prefix(SESSION)}fine.txt", Body=b"y")
    local = tmp_path / "sessions" / "ws"
    snapshot = store.hydrate(SESSION, local)
    assert set(snapshot.files) == {"fine.txt"}
    assert not (tmp_path / "sessions" / "escape.txt").exists()


# -- the deployed path -----------------------------------------------------------------

WORKSPACE_TOOL = """
    from pathlib import Path

    from pydantic import BaseModel

    from agentkit import define_tool


    class ShoutInput(BaseModel):
        source: str
        target: str


    @define_tool(description="Upper-case a workspace file into another.", execution="agent")
    def shout(input: ShoutInput, ctx) -> dict:
        text = Path(input.source).read_text()
        Path(input.target).write_text(text.upper())
        return {"read": text}
"""


@dataclasses.dataclass
class Containers:
    """One stack with a workspace bucket; each `host()` is a new Lambda container."""

    stack: Stack
    bundle: Any
    bucket: str
    tmp: Path
    count: int = 0

    def host(self) -> Any:
        from agentkit.aws.handlers import _common, api
        from agentkit.aws.host import AwsHost

        self.count += 1
        host = AwsHost(
            dataclasses.replace(self.stack.settings, workspace_bucket=self.bucket),
            bundle=self.bundle,
            clients=self.stack.host.client,
            dispatcher=self.stack.dispatcher,
            runtime_options={
                "model_resolver": lambda _id: self.stack.model,
                "lease_ttl": 30.0,
                "state_root": self.tmp / f"container{self.count}",
            },
        )
        _common.use_host(host)
        api.reset()
        return host

    def api(self, name: str, path: str | None = None, body: Any = None) -> dict[str, Any]:
        from agentkit.aws.handlers import api

        self.host()
        event = load_event(name)
        if path is not None:
            event["rawPath"] = path
            event["requestContext"]["http"]["path"] = path
        if body is not None:
            event["body"] = json.dumps(body)
        response: dict[str, Any] = api.handler(event, FakeContext())
        return response

    def run_turn(self) -> Any:
        from agentkit.aws.handlers import turn

        host = self.host()
        payload = self.stack.dispatcher.payloads.pop(0)
        assert turn.handler(payload, FakeContext())["ok"] is True
        return host


@pytest.fixture
def containers(aws_stack: Stack, s3_bucket: str, tmp_path: Path) -> Iterator[Containers]:
    from agentkit.project.build import build_project
    from agentkit.project.bundle import AgentBundle

    project = tmp_path / "project"
    tool = project / "agent" / "tools" / "shout.py"
    tool.write_text(textwrap.dedent(WORKSPACE_TOOL).lstrip("\n"), encoding="utf-8")
    build_dir = tmp_path / "build-ws"
    build_project(project, build_dir)
    settings = dataclasses.replace(aws_stack.settings, build_dir=build_dir)
    stack = dataclasses.replace(aws_stack, settings=settings)
    yield Containers(stack, AgentBundle.load_built(build_dir), s3_bucket, tmp_path / "containers")


def test_workspace_files_reach_the_turn_and_survive_to_the_next_one(
    containers: Containers, s3_client: Any, s3_bucket: str
) -> None:
    from agentkit.models.scripted import Step, call

    containers.stack.model._steps.extend(
        [
            Step.tool_calls(call("shout", {"source": "in.txt", "target": "out.txt"}, id="c1")),
            Step.text("Shouted."),
            Step.tool_calls(call("shout", {"source": "out.txt", "target": "again.txt"}, id="c2")),
            Step.text("Again."),
        ]
    )
    created = containers.api(
        "api/create-session.json", body={"message": "Shout it.", "workspaceFiles": {"in.txt": "hi"}}
    )
    assert created["statusCode"] == 200, created
    session = json.loads(created["body"])
    session_id = session["sessionId"]
    prefix = f"sessions/{session_id}/"
    assert objects(s3_client, s3_bucket, prefix) == {f"{prefix}in.txt": b"hi"}

    first = containers.run_turn()  # another container: only S3 brings in.txt there
    stored = objects(s3_client, s3_bucket, prefix)
    assert stored[f"{prefix}out.txt"] == b"HI"
    assert f"{prefix}AGENTS.md" in stored  # the seeded workspace is kept too
    assert not first.runtime.workspace(session_id).exists()  # nothing left in /tmp

    followed = containers.api(
        "api/follow-up.json",
        path=f"/v1/session/{session_id}",
        body={"continuationToken": session["continuationToken"], "message": "Again."},
    )
    assert followed["statusCode"] == 200, followed
    containers.run_turn()  # a third container reads what the first turn wrote
    assert objects(s3_client, s3_bucket, prefix)[f"{prefix}again.txt"] == b"HI"
    results = [
        json.loads(line)
        for line in containers.api("api/stream.json", path=f"/v1/session/{session_id}/events")[
            "body"
        ].splitlines()
        if line
    ]
    outputs = [e["data"] for e in results if e["type"] == "action.result"]
    assert [o.get("result") for o in outputs] == [{"read": "hi"}, {"read": "HI"}], outputs


def test_a_failed_turn_still_writes_back_what_its_tools_wrote(
    containers: Containers, s3_client: Any, s3_bucket: str
) -> None:
    from agentkit.models.scripted import Step, call

    containers.stack.model._steps.extend(
        [
            Step.tool_calls(call("shout", {"source": "in.txt", "target": "out.txt"}, id="c1")),
            Step.error("the model provider is down"),
        ]
    )
    created = containers.api(
        "api/create-session.json", body={"message": "Shout.", "workspaceFiles": {"in.txt": "x"}}
    )
    session_id = json.loads(created["body"])["sessionId"]
    host = containers.run_turn()
    types = [
        json.loads(line)["type"]
        for line in containers.api("api/stream.json", path=f"/v1/session/{session_id}/events")[
            "body"
        ].splitlines()
        if line
    ]
    assert "turn.failed" in types
    prefix = f"sessions/{session_id}/"
    assert objects(s3_client, s3_bucket, prefix)[f"{prefix}out.txt"] == b"X"
    assert not host.runtime.workspace(session_id).exists()


def test_without_a_bucket_workspaces_stay_local(aws_stack: Stack) -> None:
    # `sam local` and the tests' default stack: no bucket, the plain runtime, local folders.
    from agentkit.aws.workspace_runtime import WorkspaceRuntime

    assert aws_stack.settings.workspace_bucket is None
    assert aws_stack.host.workspaces is None
    assert not isinstance(aws_stack.host.runtime, WorkspaceRuntime)


def test_an_unreachable_bucket_answers_503_and_creates_no_session(
    containers: Containers,
) -> None:
    containers.bucket = "no-such-bucket-for-this-test"
    before = containers.stack.dispatcher.payloads[:]
    response = containers.api(
        "api/create-session.json", body={"message": "Hi.", "workspaceFiles": {"a.txt": "x"}}
    )
    assert response["statusCode"] == 503, response
    body = json.loads(response["body"])
    assert body["ok"] is False and body["error"] == "workspace_unavailable"
    assert containers.stack.dispatcher.payloads == before  # no turn was handed on
    # Messages without files never touch the bucket.
    plain = containers.api("api/create-session.json", body={"message": "Hi."})
    assert plain["statusCode"] == 200, plain
