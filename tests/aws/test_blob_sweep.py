"""The blob sweep on AWS: SchedulerFunction's five-minute sweep runs it once a UTC day (the
first sweep of the day claims it in the store), over the workspace bucket's blobs (S3 and
DynamoDB on the moto server)."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentkit.aws.handlers import _common, scheduler
from agentkit.aws.host import AwsHost
from agentkit.events import ActionResult, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES
from tests.aws.conftest import FakeContext, Stack


def test_the_first_sweep_of_the_day_sweeps_the_buckets_blobs(
    aws_stack: Stack, s3_bucket: str, s3_client: Any
) -> None:
    settings = dataclasses.replace(aws_stack.settings, workspace_bucket=s3_bucket)
    host = AwsHost(
        settings,
        bundle=aws_stack.host.bundle,
        clients=aws_stack.host._clients,
        dispatcher=aws_stack.dispatcher,
    )
    _common.use_host(host)
    record = SessionRecord(id=new_session_id())
    result = ActionResult(call_id="c1", tool_name="read_file", result="x" * 2 * LARGE_PAYLOAD_BYTES)

    async def write_then_delete() -> None:
        await host.store.create_session(record)
        await host.store.append(record.id, [draft(result, turn_id="t1")])
        assert await host.store.delete_session(record.id)

    _common.run(write_then_delete())
    assert s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="blobs/")["KeyCount"] == 1

    first = scheduler.handler({"kind": "sweep"}, FakeContext())
    # The orphan is younger than the grace period (a day): seen, and kept.
    assert first == {"ok": True, "swept": 0, "blobs": {"stored": 1, "removed": 0}}
    # Claimed for today: the next sweeps leave the blobs alone.
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 0}


def test_without_a_bucket_the_sweep_leaves_blobs_alone(aws_stack: Stack) -> None:
    assert aws_stack.settings.workspace_bucket is None
    assert scheduler.handler({"kind": "sweep"}, FakeContext()) == {"ok": True, "swept": 0}
