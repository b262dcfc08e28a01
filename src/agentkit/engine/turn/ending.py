"""Ending a turn from outside the loop: lost turns, abandoned approvals, setup failures."""

from __future__ import annotations

from collections.abc import Sequence

from agentkit.engine.folds.conversation import TurnState
from agentkit.engine.telemetry import agent_span
from agentkit.engine.turn.closed_calls import ABANDONED, APPROVED_NOT_RUN, IN_DOUBT
from agentkit.engine.turn.recorder import Recorder
from agentkit.events import (
    ActionResult,
    Payload,
    SessionFailed,
    SessionWaiting,
    TurnFailed,
    TurnStarted,
)

# A turn ended by a kill (`engine.pausing`): its task session ends with reason `killed`.
KILLED_ERROR = "session killed"
KILLED = "killed"


def session_failed(error: str) -> SessionFailed:
    """The `session.failed` of a session that ends with `error` (reason `killed` for a kill)."""
    return SessionFailed(error=error, reason=KILLED if error == KILLED_ERROR else None)


NOT_RERUN = IN_DOUBT  # the older name of the same rule
LOST_TURN = "turn lost: the process running it stopped before the turn finished"


async def fail_turn(
    recorder: Recorder, state: TurnState, error: str, settled: Sequence[ActionResult] = ()
) -> None:
    """Record `turn.failed` (after error results for every open call) and the session end.

    `settled` are results already found for calls in doubt (`engine.tools.reconcile`).
    Of the other open calls, those parked for approval and never started did not run (told
    apart by whether they were decided, so an approval closes once in the metrics); any
    other (model-requested, or approved with `action.started` recorded) may have run, so it
    is reported as in doubt and never re-run.
    """
    payloads: list[Payload] = []
    if not state.started:
        payloads.append(TurnStarted())
    payloads.extend(settled)
    done = {r.call_id for r in settled}
    for p in state.pending.values():
        if p.call_id in done:
            continue
        if p.approval_requested and not p.started:
            reason = ABANDONED if p.decision is None else APPROVED_NOT_RUN
        else:
            reason = IN_DOUBT
        payloads.append(
            ActionResult(call_id=p.call_id, tool_name=p.tool_name, is_error=True, error=reason)
        )
    payloads.append(TurnFailed(error=error, usage=state.usage, cost_usd=state.cost_usd))
    if recorder.session.mode == "task":
        payloads.append(session_failed(error))
    else:
        payloads.append(SessionWaiting())
    # The turn loop's own span never saw this end (the turn was lost, held, ended from
    # outside, or its model could not be resolved): it gets one of its own.
    with agent_span(
        recorder.agent,
        conversation_id=recorder.session.id,
        turn_id=recorder.turn_id,
        principal=recorder.session.principal,
    ) as span:
        await recorder.emit(*payloads)
        for payload in payloads:
            span.observe(payload)
        span.finish(state.usage, state.cost_usd)
    state.pending.clear()
    state.terminal = True
