"""The manifest's schedules as EventBridge schedules: after every deploy, the stack's
schedule group holds exactly the manifest's schedules (added, changed and removed ones).

A CloudFormation custom resource backed by SchedulerFunction runs `reconcile` on Create and
Update (the template passes the function version, so new code, and with it a new
manifest.json, always triggers an Update) and removes them all on Delete. Only names with
the `schedule-` prefix are touched: reminders live in the same group as `reminder-*`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkit.aws.timer import schedule_name as timer_schedule_name
from agentkit.aws.timer import scheduler_input
from agentkit.cron.eventbridge import UntranslatableCron, to_eventbridge_cron
from agentkit.project.manifest import ScheduleSpec
from agentkit.scheduling.timer import schedule_key

log = logging.getLogger("agentkit.aws.schedules")

SCHEDULE_PREFIX = "schedule-"


def schedule_name(schedule_id: str) -> str:
    """The EventBridge schedule name of a manifest schedule."""
    return timer_schedule_name(schedule_key(schedule_id))


@dataclass(frozen=True, slots=True)
class Desired:
    name: str
    expression: str
    input: str
    description: str


@dataclass(slots=True)
class ReconcileResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # id -> why (untranslatable)

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
        }


def desired_schedules(
    schedules: Iterable[ScheduleSpec], result: ReconcileResult
) -> dict[str, Desired]:
    """The schedules the group should hold. The build refuses untranslatable cron; should
    one slip through, it is skipped and reported rather than failing the deploy."""
    desired: dict[str, Desired] = {}
    for spec in schedules:
        try:
            expression = to_eventbridge_cron(spec.cron)
        except UntranslatableCron as exc:
            result.skipped[spec.id] = str(exc)
            continue
        name = schedule_name(spec.id)
        desired[name] = Desired(
            name=name,
            expression=expression,
            input=scheduler_input("schedule", spec.id),
            description=f"agentkit schedule {spec.id} ({spec.cron} UTC)"[:512],
        )
    return desired


def reconcile(
    client: Any,
    *,
    group: str,
    schedules: Iterable[ScheduleSpec],
    target_arn: str,
    role_arn: str,
) -> ReconcileResult:
    """Make the group's `schedule-*` schedules equal `schedules`."""
    result = ReconcileResult()
    desired = desired_schedules(schedules, result)
    existing = set(_list_names(client, group))
    for name in sorted(existing - desired.keys()):
        _delete(client, group, name)
        result.deleted.append(name)
    for name, want in sorted(desired.items()):
        request = _request(want, group, target_arn, role_arn)
        if name not in existing:
            client.create_schedule(**request)
            result.created.append(name)
        elif _differs(client.get_schedule(Name=name, GroupName=group), request):
            client.update_schedule(**request)
            result.updated.append(name)
        else:
            result.unchanged.append(name)
    log.info("schedules reconciled: %s", result.as_dict())
    return result


def remove_all(client: Any, *, group: str) -> list[str]:
    """Delete every manifest schedule of the group (the stack is going away)."""
    names = sorted(_list_names(client, group))
    for name in names:
        _delete(client, group, name)
    return names


def _list_names(client: Any, group: str) -> list[str]:
    names: list[str] = []
    kwargs: dict[str, Any] = {"GroupName": group, "NamePrefix": SCHEDULE_PREFIX}
    while True:
        page = client.list_schedules(**kwargs)
        names += [
            s["Name"] for s in page.get("Schedules", []) if s["Name"].startswith(SCHEDULE_PREFIX)
        ]
        token = page.get("NextToken")
        if not token:
            return names
        kwargs["NextToken"] = token


def _delete(client: Any, group: str, name: str) -> None:
    with contextlib.suppress(client.exceptions.ResourceNotFoundException):
        client.delete_schedule(Name=name, GroupName=group)


def _request(want: Desired, group: str, target_arn: str, role_arn: str) -> dict[str, Any]:
    return {
        "Name": want.name,
        "GroupName": group,
        "ScheduleExpression": want.expression,
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Description": want.description,
        "State": "ENABLED",
        "Target": {
            "Arn": target_arn,
            "RoleArn": role_arn,
            "Input": want.input,
            "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600},
        },
    }


def _differs(current: Mapping[str, Any], request: Mapping[str, Any]) -> bool:
    target = current.get("Target", {})
    return (
        current.get("ScheduleExpression") != request["ScheduleExpression"]
        or current.get("ScheduleExpressionTimezone", "UTC") != "UTC"
        or current.get("State") != "ENABLED"
        or current.get("Description") != request["Description"]
        or target.get("Arn") != request["Target"]["Arn"]
        or target.get("RoleArn") != request["Target"]["RoleArn"]
        or target.get("Input") != request["Target"]["Input"]
    )


# -- CloudFormation custom resource protocol ------------------------------------------


def send_cfn_response(
    event: Mapping[str, Any],
    *,
    success: bool,
    data: Mapping[str, Any] | None = None,
    reason: str = "",
    physical_id: str | None = None,
) -> None:
    """PUT the result of a custom resource request to its pre-signed ResponseURL."""
    body = json.dumps(
        {
            "Status": "SUCCESS" if success else "FAILED",
            "Reason": (reason or "see the function's logs")[:3000],
            "PhysicalResourceId": physical_id
            or event.get("PhysicalResourceId")
            or f"{event.get('LogicalResourceId', 'schedules')}",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            # CloudFormation caps response data at 4 KB; counts are enough.
            "Data": {
                k: (len(v) if isinstance(v, list | dict) else v) for k, v in (data or {}).items()
            },
        }
    ).encode("utf-8")
    request = urllib.request.Request(
        str(event["ResponseURL"]),
        data=body,
        method="PUT",
        headers={"content-type": "", "content-length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
