"""The emulated Scheduler's reading of its group, against the DynamoDB-API server's
Scheduler API: a one-shot fires however late a scan first sees it, and a scan reads again
only the schedules that changed."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from agentkit.emulator.chaos import Chaos, ChaosSpec
from agentkit.emulator.scheduler import SchedulerService

TARGET = "arn:aws:lambda:us-east-1:123456789012:function:scheduler"


class RecordedInvokes:
    """Stands in for the emulated Lambda service: keeps each asynchronous invoke."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def logical_id(self, function_name: str) -> str | None:
        return "SchedulerFunction" if function_name == TARGET else None

    def invoke_async(self, function: str, event: Any) -> None:
        self.events.append(event)


class CountedGets:
    """The Scheduler client, counting `get_schedule` calls."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.gets = 0

    def get_schedule(self, **kwargs: Any) -> Any:
        self.gets += 1
        return self._client.get_schedule(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def scheduler_client(endpoint: str) -> Any:
    return boto3.client(
        "scheduler",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


def one_shot(client: Any, group: str, at: datetime) -> str:
    name = f"once-{uuid.uuid4().hex[:8]}"
    client.create_schedule(
        Name=name,
        GroupName=group,
        ScheduleExpression=f"at({at.strftime('%Y-%m-%dT%H:%M:%S')})",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": TARGET, "RoleArn": "arn:aws:iam::123456789012:role/s", "Input": "{}"},
        ActionAfterCompletion="NONE",
    )
    return name


def service(client: Any, group: str, clock: list[datetime]) -> tuple[SchedulerService, Any]:
    invokes = RecordedInvokes()
    scheduler = SchedulerService(
        lambda: client,
        group,
        invokes,  # type: ignore[arg-type]
        Chaos(ChaosSpec()),
        clock=lambda: clock[0],
    )
    return scheduler, invokes


def test_a_one_shot_first_read_after_its_time_still_fires_once(dynamodb_endpoint: str) -> None:
    # A busy emulator reads its group seconds late; Scheduler fires a schedule written for
    # a future time whenever that time comes, so a late read must not skip it.
    client = scheduler_client(dynamodb_endpoint)
    group = f"g-{uuid.uuid4().hex[:8]}"
    client.create_schedule_group(Name=group)
    at = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    one_shot(client, group, at)
    clock = [at + timedelta(seconds=30)]  # the first scan, long after the time
    scheduler, invokes = service(client, group, clock)

    for _ in range(3):
        scheduler._refresh()
        asyncio.run(scheduler._fire_due())
        clock[0] += timedelta(seconds=1)

    assert len(invokes.events) == 1
    assert [f.scheduled_time for f in scheduler.firings] == [at.strftime("%Y-%m-%dT%H:%M:%SZ")]


def test_a_scan_reads_again_only_the_schedules_that_changed(dynamodb_endpoint: str) -> None:
    client = CountedGets(scheduler_client(dynamodb_endpoint))
    group = f"g-{uuid.uuid4().hex[:8]}"
    client.create_schedule_group(Name=group)
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    names = [one_shot(client, group, later) for _ in range(3)]
    scheduler, invokes = service(client, group, [datetime.now(UTC)])

    scheduler._refresh()
    assert client.gets == 3
    scheduler._refresh()
    assert client.gets == 3  # nothing changed: no schedule read again

    sooner = later - timedelta(minutes=30)
    client.update_schedule(
        Name=names[0],
        GroupName=group,
        ScheduleExpression=f"at({sooner.strftime('%Y-%m-%dT%H:%M:%S')})",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": TARGET, "RoleArn": "arn:aws:iam::123456789012:role/s", "Input": "{}"},
    )
    scheduler._refresh()
    assert client.gets == 4
    assert scheduler._armed[names[0]].due == sooner
    assert invokes.events == []
