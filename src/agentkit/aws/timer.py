"""The `Timer` port on EventBridge Scheduler: one schedule per armed key, in the stack's group.

`arm(key, at)` without a recurrence becomes an `at()` one-shot that Scheduler deletes itself
after it fires (`ActionAfterCompletion: DELETE`); with a recurrence hint it becomes `rate()`
(every) or EventBridge `cron()`, and re-arming it after each firing, as the reminder service
does, is a no-op while the expression is unchanged. `disarm` deletes the schedule. Every
schedule targets SchedulerFunction with `{"kind": ..., "<kind>Id": ...}` plus Scheduler's
execution id, so a redelivered firing can be recognised.

Names are `reminder-<id>` (and `schedule-<id>` for the manifest's schedules, which
`agentkit.aws.schedules` reconciles at deploy time) inside the stack's schedule group, which
scopes them to the stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from agentkit.cron.eventbridge import at_expression, rate_expression, to_eventbridge_cron
from agentkit.cron.standard import parse_duration
from agentkit.scheduling.timer import Clock, Recurrence, SystemClock, split_key

log = logging.getLogger("agentkit.aws.timer")

_NAME_OK = re.compile(r"[^0-9A-Za-z_.-]")
# Scheduler refuses a one-shot in the past; a due-now wake is set a little ahead instead.
_MIN_LEAD = timedelta(seconds=5)


def schedule_name(key: str) -> str:
    """The schedule name of a timer key: `reminder:<id>` -> `reminder-<id>` (64 chars max)."""
    kind, ident = split_key(key)
    name = f"{kind}-" + _NAME_OK.sub("-", ident)
    if len(name) > 64:
        raise ValueError(f"timer key too long for a schedule name: {key[:80]!r}")
    return name


def scheduler_input(kind: str, ident: str) -> str:
    """The payload Scheduler hands SchedulerFunction; it fills in the `<aws.scheduler.*>`."""
    return json.dumps(
        {
            "kind": kind,
            f"{kind}Id": ident,
            "scheduledTime": "<aws.scheduler.scheduled-time>",
            "executionId": "<aws.scheduler.execution-id>",
            "attempt": "<aws.scheduler.attempt-number>",
        }
    )


def expression_for(at: datetime, recurrence: Recurrence | None, now: datetime) -> str:
    """`at()` for a one-shot, `rate()`/`cron()` for a recurring key."""
    if recurrence is None:
        return at_expression(max(at, now + _MIN_LEAD))
    if recurrence.kind == "cron":
        return to_eventbridge_cron(recurrence.spec)
    return rate_expression(parse_duration(recurrence.spec).total_seconds())


class EventBridgeTimer:
    """Wakes keys through EventBridge Scheduler (implements `agentkit.scheduling.timer.Timer`)."""

    def __init__(
        self,
        client: Any,
        *,
        group: str,
        target_arn: str,
        role_arn: str,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._group = group
        self._target_arn = target_arn
        self._role_arn = role_arn
        self._clock: Clock = clock or SystemClock()

    @property
    def clock(self) -> Clock:
        return self._clock

    async def arm(self, key: str, at: datetime, *, recurrence: Recurrence | None = None) -> None:
        await asyncio.to_thread(self._arm, key, at, recurrence)

    async def disarm(self, key: str) -> None:
        await asyncio.to_thread(self._disarm, key)

    def request(self, key: str, at: datetime, recurrence: Recurrence | None) -> dict[str, Any]:
        """The CreateSchedule/UpdateSchedule arguments for arming `key`."""
        kind, ident = split_key(key)
        expression = expression_for(at, recurrence, self._clock.now().astimezone(UTC))
        request: dict[str, Any] = {
            "Name": schedule_name(key),
            "GroupName": self._group,
            "ScheduleExpression": expression,
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Description": f"agentkit {kind} {ident}"[:512],
            "State": "ENABLED",
            "Target": {
                "Arn": self._target_arn,
                "RoleArn": self._role_arn,
                "Input": scheduler_input(kind, ident),
                "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600},
            },
        }
        if recurrence is None:
            request["ActionAfterCompletion"] = "DELETE"
        elif recurrence.kind == "every" and at > self._clock.now():
            # rate() counts from StartDate: the first tick lands where the owner asked.
            request["StartDate"] = at
        return request

    def _arm(self, key: str, at: datetime, recurrence: Recurrence | None) -> None:
        request = self.request(key, at, recurrence)
        errors = self._client.exceptions
        try:
            self._client.create_schedule(**request)
        except errors.ConflictException:
            if recurrence is not None and self._unchanged(request):
                return  # the recurring schedule already fires on this cadence
            try:
                self._client.update_schedule(**request)
            except errors.ResourceNotFoundException:
                # deleted after completion between our two calls
                self._client.create_schedule(**request)
        log.info("armed %s as %s", key, request["ScheduleExpression"])

    def _unchanged(self, request: dict[str, Any]) -> bool:
        try:
            current = self._client.get_schedule(Name=request["Name"], GroupName=self._group)
        except self._client.exceptions.ResourceNotFoundException:
            return False
        return bool(
            current.get("ScheduleExpression") == request["ScheduleExpression"]
            and current.get("Target", {}).get("Input") == request["Target"]["Input"]
            and current.get("State") == "ENABLED"
        )

    def _disarm(self, key: str) -> None:
        with contextlib.suppress(self._client.exceptions.ResourceNotFoundException):
            self._client.delete_schedule(Name=schedule_name(key), GroupName=self._group)
