"""SchedulerFunction: what EventBridge Scheduler, CloudFormation and failed turns call.

- `{"kind": "schedule", "scheduleId": ...}`: a manifest schedule fired; dispatched through
  the same path as `POST /v1/dev/schedules/:id`.
- `{"kind": "reminder", "reminderId": ...}`: a reminder came due; the reminder service
  delivers it and re-arms or finishes it.
  Scheduler delivers at least once; its execution id is claimed in the store first, so a
  redelivered firing does nothing.
- `{"kind": "sweep"}` (a rate schedule of the stack): open turns with no live lease,
  quiet for longer than the lease TTL, are dispatched again (never started) or failed.
- A CloudFormation custom resource request (`RequestType`): reconcile the stack's schedule
  group with the manifest (Create/Update) or empty it (Delete), then answer CloudFormation.
- A Lambda destination record of TurnFunction (its retries ran out, or the invocation grew
  too old): the turn's worker is lost; the turn is recorded as `turn.failed` with a clear
  error so the session takes messages again.
"""

from __future__ import annotations

import logging
from typing import Any

from agentkit.aws import schedules as manifest_schedules
from agentkit.aws.handlers._common import host, instrumented, run
from agentkit.aws.observability import bind_turn

log = logging.getLogger("agentkit.aws.scheduler")


@instrumented
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if "RequestType" in event and "ResponseURL" in event:
        return _custom_resource(event)
    if "requestPayload" in event and "requestContext" in event:
        return _lost_turn(event)
    kind = event.get("kind")
    if kind == "schedule":
        return _fire(event, "scheduleId")
    if kind == "reminder":
        return _fire(event, "reminderId")
    if kind == "sweep":
        return {"ok": True, "swept": run(host().sweep())}
    log.error("unrecognised event: keys %s", sorted(event)[:20])
    return {"ok": False, "error": "bad_request"}


def _fire(event: dict[str, Any], key: str) -> dict[str, Any]:
    ident = event.get(key)
    if not isinstance(ident, str) or not ident:
        log.error("%s missing from a %s firing", key, event.get("kind"))
        return {"ok": False, "error": "bad_request"}
    execution = event.get("executionId")
    h = host()
    real_execution = isinstance(execution, str) and execution and not execution.startswith("<")
    if real_execution and not run(h.claim_once(f"scheduler:{execution}")):
        log.info("duplicate delivery of execution %s ignored", execution)
        return {"ok": True, "duplicate": True}
    if key == "scheduleId":
        result = run(h.dispatch_schedule(ident))
        return {"ok": True, **result}
    run(h.fire_reminder(ident))
    return {"ok": True, "reminderId": ident}


def _lost_turn(event: dict[str, Any]) -> dict[str, Any]:
    payload = event.get("requestPayload") or {}
    session_id = payload.get("sessionId") if isinstance(payload, dict) else None
    turn_id = payload.get("turnId") if isinstance(payload, dict) else None
    if not isinstance(session_id, str) or not isinstance(turn_id, str):
        log.error("a failed turn invocation without session and turn ids: %s", payload)
        return {"ok": False, "error": "bad_request"}
    bind_turn(session_id, turn_id)
    condition = (event.get("requestContext") or {}).get("condition") or "RetriesExhausted"
    response = event.get("responsePayload") or {}
    detail = response.get("errorMessage") if isinstance(response, dict) else None
    reason = f"turn lost: its worker failed and Lambda gave up ({condition})"
    if detail:
        reason += f": {str(detail)[:300]}"
    log.error("turn invocation failed for good: %s", reason)
    recorded = run(host().fail_lost_turn(session_id, turn_id, reason))
    return {"ok": True, "sessionId": session_id, "turnId": turn_id, "recorded": recorded}


def _custom_resource(event: dict[str, Any]) -> dict[str, Any]:
    h = host()
    props = event.get("ResourceProperties") or {}
    group = str(props.get("ScheduleGroup") or h.settings.schedule_group)
    physical_id = f"{group}-schedules"
    try:
        client = h.client("scheduler")
        if event["RequestType"] == "Delete":
            deleted = manifest_schedules.remove_all(client, group=group)
            data: dict[str, Any] = {"deleted": deleted}
        else:
            result = manifest_schedules.reconcile(
                client,
                group=group,
                schedules=h.bundle.manifest.schedules,
                target_arn=h.settings.scheduler_target_arn,
                role_arn=h.settings.scheduler_role_arn,
            )
            data = result.as_dict()
    except Exception as exc:
        log.exception("schedule reconciliation failed")
        manifest_schedules.send_cfn_response(
            event, success=False, reason=f"{type(exc).__name__}: {exc}", physical_id=physical_id
        )
        return {"ok": False}
    manifest_schedules.send_cfn_response(event, success=True, data=data, physical_id=physical_id)
    return {"ok": True, **data}
