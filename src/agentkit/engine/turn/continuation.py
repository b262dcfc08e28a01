"""The turn loop's side of continuing in another invocation (see `engine.turn.deadline`):
deferring calls that cannot finish in time, stopping at a step boundary, and picking a
continued turn up where an earlier invocation left it."""

from __future__ import annotations

from agentkit.costs import add_costs
from agentkit.engine.turn.budget import Spend, tokens
from agentkit.engine.turn.deadline import Continuation, ContinueTurn
from agentkit.engine.turn.deps import Planned, RequestedCall, RunningTurn
from agentkit.engine.turn.step import StepOutput
from agentkit.events import StepCompleted, Usage


def defer_unless_fits(
    runner: RunningTurn, runnable: list[Planned], parked: list[Planned], done: StepCompleted
) -> None:
    """Stop before starting a step's calls when one of them cannot finish in time.

    All of the step's calls are deferred together, none started: a declared timeout longer
    than what is left means the calls wait for a fresh invocation."""
    deadline = runner.d.deadline
    if deadline is None:
        return
    if all(p.entry is None or deadline.call_fits(p.entry.timeout) for p in runnable):
        return
    raise ContinueTurn(
        Continuation(
            runner.state.steps,
            deferred=[p.call.call_id for p in runnable],
            approvals=[p.call.call_id for p in parked],
            done=done,
        )
    )


async def resume_continued(runner: RunningTurn, marker: Continuation) -> bool:
    """Carry on where an earlier invocation stopped; False when the turn parked."""
    if marker.done is None:
        return True  # a clean step boundary: the loop starts the next step
    pending = runner.state.pending
    plans: list[Planned] = []
    for call_id in [*marker.deferred, *marker.approvals]:
        open_call = pending[call_id]
        plans.append(runner.plan(RequestedCall(call_id, open_call.tool_name, open_call.arguments)))
    for planned in plans:
        runner.open[planned.call.call_id] = planned.call
    runnable = [p for p in plans if p.call.call_id in marker.deferred]
    for planned in runnable:
        planned.needs_approval = False  # judged when the step ran, not again now
    parked = [p for p in plans if p.call.call_id in marker.approvals]
    defer_unless_fits(runner, runnable, parked, marker.done)
    done = marker.done
    # The step's usage is in its `step.completed`, recorded only now.
    step_usage = done.usage or Usage()
    runner.usage = runner.usage + step_usage
    runner.cost = add_costs(runner.cost, done.cost_usd)
    runner.last_step = Spend(tokens(step_usage), done.cost_usd)
    await runner.run_calls(runnable)
    return await runner.end_step(parked, done, StepOutput()) is not None


async def stop_to_continue(runner: RunningTurn, marker: Continuation) -> None:
    """Record what is queued (never an ending) and leave the rest to the next invocation,
    unless this one made no progress at all: then no invocation could, so the turn ends."""
    if not runner.progressed:
        deadline = runner.d.deadline
        left = deadline.remaining() if deadline is not None else 0.0
        await runner.fail(
            f"the turn cannot continue: a fresh invocation had {left:.0f} s left, less than"
            " its next step or tool call needs; raise the turn function's timeout, lower"
            " AGENTKIT_TURN_MARGIN or the tool's declared timeout"
        )
        return
    await runner.emit()
    runner.continued = marker
