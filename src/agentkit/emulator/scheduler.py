"""EventBridge Scheduler -> SchedulerFunction: the stack's schedule group, fired on time.

The schedules themselves live in the DynamoDB-API server's Scheduler API (moto), where the
functions create them (the manifest's, through the reconciler; reminders, at run time).
This module reads the group every `poll` seconds and fires each schedule's target as
Scheduler does: `at()` once (then deleted when `ActionAfterCompletion` is DELETE), `rate()`
from its start, `cron()` with EventBridge's six fields (`?`, day-of-week 1-7 from Sunday, a
year), in UTC. A firing is an asynchronous invoke of the target with the schedule's input,
its `<aws.scheduler.*>` placeholders filled; a duplicated firing (chaos) keeps its
execution id, as Scheduler's at-least-once redelivery does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agentkit.emulator.background import BackgroundLoop
from agentkit.emulator.chaos import Chaos
from agentkit.emulator.lambda_service import LambdaService

log = logging.getLogger("agentkit.emulator.scheduler")

_AT = re.compile(r"^at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)$")
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_UNIT = {"minute": 60, "hour": 3600, "day": 86400}


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def cron_to_standard(fields: str) -> str:
    """EventBridge `cron(m h dom mon dow year)` as standard five-field cron."""
    parts = fields.split()
    if len(parts) != 6:
        raise ValueError(f"EventBridge cron needs six fields, got {fields!r}")
    minute, hour, dom, month, dow, _year = parts

    def shift(token: str) -> str:  # 1-7 (SUN-SAT) -> 0-6
        return re.sub(r"\d+", lambda m: str((int(m.group()) - 1) % 7), token)

    dom = "*" if dom == "?" else dom
    dow = "*" if dow == "?" else shift(dow)
    return f"{minute} {hour} {dom} {month} {dow}"


def next_occurrence(
    expression: str, after: datetime, start: datetime | None = None
) -> datetime | None:
    """The first time strictly after `after` the expression fires (None: never again)."""
    after = _utc(after)
    if m := _AT.match(expression):
        when = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC)
        return when if when > after else None
    if m := _RATE.match(expression):
        step = timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2).rstrip("s")])
        origin = _utc(start) if start is not None else after
        if origin > after:
            return origin
        periods = int((after - origin) / step) + 1
        return origin + periods * step
    if m := _CRON.match(expression):
        from agentkit.cron.standard import next_fire

        return next_fire(cron_to_standard(m.group(1)), after)
    raise ValueError(f"unsupported schedule expression {expression!r}")


@dataclass(slots=True)
class _Armed:
    expression: str
    input: str
    target: str
    delete_after: bool
    due: datetime | None
    modified: Any = None  # the schedule's LastModificationDate when it was read


@dataclass(frozen=True, slots=True)
class Firing:
    """One occurrence of a schedule, as delivered."""

    name: str
    scheduled_time: str
    execution_id: str


class SchedulerService(BackgroundLoop):
    """Fires the schedules of one group."""

    def __init__(
        self,
        client: Callable[[], Any],
        group: str,
        lambdas: LambdaService,
        chaos: Chaos,
        *,
        poll: float = 0.5,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._group = group
        self._lambdas = lambdas
        self._chaos = chaos
        self._poll = poll
        self._clock = clock
        self._armed: dict[str, _Armed] = {}
        self.firings: list[Firing] = []

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self._refresh)
                await self._fire_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading the schedule group failed; trying again")
            await asyncio.sleep(self._poll)

    def _refresh(self) -> None:
        """Re-read the group: new and changed schedules armed, removed ones forgotten."""
        client = self._client()
        modified: dict[str, Any] = {}
        kwargs: dict[str, Any] = {"GroupName": self._group}
        while True:
            page = client.list_schedules(**kwargs)
            modified |= {
                s["Name"]: s.get("LastModificationDate") for s in page.get("Schedules", [])
            }
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
        for gone in set(self._armed) - set(modified):
            del self._armed[gone]
        now = self._clock()
        for name, stamp in modified.items():
            known = self._armed.get(name)
            # Read again only what changed: a get per schedule per poll made the scan of a
            # busy group take longer than a one-shot's lead, and loaded the server.
            if known is not None and stamp is not None and known.modified == stamp:
                continue
            try:
                current = client.get_schedule(Name=name, GroupName=self._group)
            except client.exceptions.ResourceNotFoundException:
                continue
            target = current.get("Target") or {}
            expression = str(current.get("ScheduleExpression", ""))
            if (
                known is not None
                and known.expression == expression
                and known.input == str(target.get("Input", ""))
            ):
                known.modified = stamp
                continue
            if current.get("State", "ENABLED") != "ENABLED":
                self._armed.pop(name, None)
                continue
            start = current.get("StartDate")
            # A one-shot is due from when it was written, not from when this scan saw it:
            # Scheduler takes only a future `at()`, and fires it however late it was read.
            written = current.get("LastModificationDate") or current.get("CreationDate")
            after = now
            if _AT.match(expression) and isinstance(written, datetime):
                after = min(now, _utc(written))
            try:
                due = next_occurrence(
                    expression, after - timedelta(seconds=1), start or current.get("CreationDate")
                )
            except ValueError as exc:
                log.error("schedule %s cannot be emulated: %s", name, exc)
                continue
            self._armed[name] = _Armed(
                expression=expression,
                input=str(target.get("Input", "{}")),
                target=str(target.get("Arn", "")),
                delete_after=current.get("ActionAfterCompletion") == "DELETE",
                due=due,
                modified=stamp,
            )

    async def _fire_due(self) -> None:
        now = self._clock()
        for name, armed in list(self._armed.items()):
            if armed.due is None or armed.due > now:
                continue
            self._fire(name, armed, armed.due)
            armed.due = next_occurrence(armed.expression, armed.due)
            if armed.due is None and armed.delete_after:
                await asyncio.to_thread(self._delete, name)

    def _fire(self, name: str, armed: _Armed, when: datetime) -> None:
        function = self._lambdas.logical_id(armed.target)
        if function is None:
            log.error("schedule %s targets an unknown function %s", name, armed.target)
            return
        firing = Firing(name, when.strftime("%Y-%m-%dT%H:%M:%SZ"), str(uuid.uuid4()))
        self.firings.append(firing)
        event = fill_placeholders(armed.input, firing, attempt=1)
        self._lambdas.invoke_async(function, event)
        if self._chaos.roll("duplicate", f"schedule {name} firing"):
            self._lambdas.invoke_async(function, fill_placeholders(armed.input, firing, 2))

    def _delete(self, name: str) -> None:
        client = self._client()
        with contextlib.suppress(client.exceptions.ResourceNotFoundException):
            client.delete_schedule(Name=name, GroupName=self._group)


def fill_placeholders(text: str, firing: Firing, attempt: int) -> Any:
    """The target input with Scheduler's context attributes filled in."""
    import json

    filled = (
        text.replace("<aws.scheduler.scheduled-time>", firing.scheduled_time)
        .replace("<aws.scheduler.execution-id>", firing.execution_id)
        .replace("<aws.scheduler.attempt-number>", str(attempt))
        .replace("<aws.scheduler.schedule-arn>", f"arn:aws:scheduler:::schedule/{firing.name}")
    )
    return json.loads(filled)
