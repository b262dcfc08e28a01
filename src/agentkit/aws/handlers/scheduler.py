"""SchedulerFunction: what EventBridge Scheduler, CloudFormation and failed turns call.

- `{"kind": "schedule", "scheduleId": ...}`: a manifest schedule fired; dispatched through
  the same path as `POST /v1/dev/schedules/:id`.
- `{"kind": "reminder", "reminderId": ...}`: a reminder came due; the reminder service
  delivers it and re-arms or finishes it.
  Scheduler delivers at least once; its execution id is claimed in the store first (see
  `agentkit.scheduling.claims`): a redelivered firing does nothing, a failed attempt
  releases its claim and raises so the retry runs it, a crashed one's claim is taken over
  by Lambda's retry of it (the same request id) unless the message was already delivered,
  and a schedule handler's own error is recorded as such.
- `{"kind": "sweep"}` (a rate schedule of the stack): open turns with no live lease,
  quiet for longer than the lease TTL, are dispatched again (never started) or failed; and
  schedule slots the kill switch held are caught up once it is off (`aws.held_schedules`);
  one-shot reminders whose firing was lost (still due half an hour on) are armed again
  (`ReminderService.rearm_overdue`); and, once a UTC day, the bucket's blobs no event
  names are removed (`store.blob_sweep`).
- A CloudFormation custom resource request (`RequestType`): reconcile the stack's schedule
  group with the manifest (Create/Update) or empty it (Delete), then answer CloudFormation.
- A Lambda destination record of TurnFunction (its retries ran out, or the invocation grew
  too old): the turn's worker is lost; the turn is recorded as `turn.failed` with a clear
  error so the session takes messages again.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from agentkit.aws import held_schedules
from agentkit.aws import schedules as manifest_schedules
from agentkit.aws.handlers._common import host, instrumented, run
from agentkit.aws.observability import bind_turn
from agentkit.cron.standard import parse_instant
from agentkit.scheduling.claims import run_claimed

log = logging.getLogger("agentkit.aws.scheduler")


@instrumented
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if "RequestType" in event and "ResponseURL" in event:
        return _custom_resource(event)
    if "requestPayload" in event and "requestContext" in event:
        return _lost_turn(event)
    kind = event.get("kind")
    if kind == "schedule":
        return _fire(event, "scheduleId", context)
    if kind == "reminder":
        return _fire(event, "reminderId", context)
    if kind == "sweep":
        h = host()
        answer: dict[str, Any] = {"ok": True, "swept": run(h.sweep())}
        caught_up = run(held_schedules.catch_up_held(h))
        if caught_up:
            answer["caughtUp"] = caught_up
        rearmed = run(h.reminders.rearm_overdue())
        if rearmed:
            answer["remindersRearmed"] = rearmed
        try:
            blobs = run(h.sweep_blobs())
        except Exception:  # the blob sweep is housekeeping: it never fails the turn sweep
            log.exception("the blob sweep failed; the next day's sweep tries again")
            blobs = None
        if blobs is not None:
            answer["blobs"] = blobs
        return answer
    log.error("unrecognised event: keys %s", sorted(event)[:20])
    return {"ok": False, "error": "bad_request"}


def _fire(event: dict[str, Any], key: str, context: Any) -> dict[str, Any]:
    ident = event.get(key)
    if not isinstance(ident, str) or not ident:
        log.error("%s missing from a %s firing", key, event.get("kind"))
        return {"ok": False, "error": "bad_request"}
    execution = event.get("executionId")
    h = host()

    async def work() -> dict[str, Any]:
        if key == "scheduleId":
            if await held_schedules.switch_on(h):  # kept, and caught up once lifted
                return {"ok": True, **await held_schedules.hold(h, ident, datetime.now(UTC))}
            return {"ok": True, **await h.schedules.dispatch_schedule(ident)}
        # strict: an error before delivery raises, so the claim is released and retried
        result = await h.reminders.fire(ident, strict=True, scheduled_at=_scheduled(event))
        return {"ok": True, "reminderId": ident, **(result or {})}

    real_execution = isinstance(execution, str) and execution and not execution.startswith("<")
    if not real_execution:  # `sam local invoke` with a placeholder: nothing to claim
        return run(work())
    claim_key = f"scheduler:{execution}"
    request_id = getattr(context, "aws_request_id", None)

    async def delivered_since(started_at: float) -> bool:
        return key == "reminderId" and await _reminder_delivered_since(h, ident, started_at)

    return run(
        run_claimed(
            h.store,
            claim_key,
            work,
            timeout=_attempt_timeout(context),
            attempt=request_id if isinstance(request_id, str) and request_id else None,
            ran_since=delivered_since,
        )
    )


async def _reminder_delivered_since(h: Any, reminder_id: str, started_at: float) -> bool:
    """Whether an attempt that died after `started_at` (epoch seconds) had delivered the
    reminder already: it must not be delivered again."""
    record = await h.reminders.get(reminder_id)
    return record is not None and bool(await h.reminders.delivered_since(record, started_at))


def _scheduled(event: dict[str, Any]) -> datetime | None:
    """The time Scheduler scheduled this firing for (None: absent, or a placeholder)."""
    value = event.get("scheduledTime")
    if not isinstance(value, str):
        return None
    try:
        return parse_instant(value)
    except ValueError:
        return None


def _attempt_timeout(context: Any) -> float:
    """How long an attempt's claim holds: the time this invocation has left, plus a margin,
    so a retry after a timeout or a crash finds it lapsed."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    try:
        seconds = float(remaining()) / 1000.0 if callable(remaining) else 900.0
    except Exception:
        seconds = 900.0
    return max(seconds, 1.0) + 30.0


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
