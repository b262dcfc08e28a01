"""TurnFunction: runs or resumes one turn, invoked asynchronously with
`{"sessionId", "turnId"}`. Delivery is at-least-once; the runtime's turn lease makes a
duplicate do nothing. Errors propagate so Lambda retries and, when retries run out, sends
the request to the on-failure destination (SchedulerFunction records the lost turn).

The invocation's remaining time is the turn's deadline: with less than
`AGENTKIT_TURN_MARGIN` seconds left (120 by default) the turn stops at its next step
boundary and invokes this function again with the same payload, to carry on there.

It also runs eval runs started over the API, invoked with `{"kind": "evalRun", "runId"}`
(see `agentkit.aws.eval_runs`)."""

from __future__ import annotations

from typing import Any

from agentkit.aws import snapstart
from agentkit.aws.handlers._common import host, instrumented, run
from agentkit.aws.observability import bind_turn
from agentkit.engine.trace_context import TRACE_CONTEXT, continued_from
from agentkit.engine.turn.deadline import Deadline


@instrumented
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("kind") == "evalRun":
        return _eval_run(event)
    session_id = event.get("sessionId")
    turn_id = event.get("turnId")
    if not isinstance(session_id, str) or not isinstance(turn_id, str):
        # Retrying cannot fix a malformed payload: log it and return.
        return {"ok": False, "error": "bad_request", "message": "sessionId and turnId required"}
    bind_turn(session_id, turn_id)
    current = host()
    deadline = Deadline.of_lambda(context, current.settings.turn_margin)
    with continued_from(event.get(TRACE_CONTEXT)):  # the API request's trace, when traced
        run(current.run_turn(session_id, turn_id, deadline))
    return {"ok": True, "sessionId": session_id, "turnId": turn_id}


def _eval_run(event: dict[str, Any]) -> dict[str, Any]:
    run_id = event.get("runId")
    if not isinstance(run_id, str) or not run_id:
        return {"ok": False, "error": "bad_request", "message": "runId required"}
    ran = run(host().run_eval(run_id))
    return {"ok": True, "runId": run_id, "ran": ran}


# Under a SnapStart init, build the host now: it goes into the snapshot.
snapstart.register()
