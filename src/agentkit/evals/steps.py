"""Play a case's steps against its `CaseHost` through the engine's public service.

Messages start the session and follow it up; approvals resolve the next parked call; clock
advances move the manual clock one due instant at a time, letting every session settle in
between (in production minutes pass between firings, so a turn started by one firing ends
before the next fires); interrupts are follow-ups sent while a turn runs; `cut_after` reads
a turn's stream as a client, drops it mid-turn and resumes from the last index it saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentkit.authoring.eval_steps import Advance, CallTool, Decide, EvalStep, Interrupt, Say
from agentkit.authoring.evals import Trajectory
from agentkit.cron.standard import parse_duration
from agentkit.evals.case import EVAL_PRINCIPAL, CaseHost
from agentkit.events import Event

__all__ = ["Play", "StepError", "play"]


class StepError(RuntimeError):
    """A step could not be carried out (no parked call to approve, no session yet, ...)."""


@dataclass(slots=True)
class Play:
    """The state of one script being played."""

    host: CaseHost
    timeout: float
    session_id: str | None = None
    token: str | None = None
    streamed: list[Event] = field(default_factory=list)


async def play(steps: tuple[EvalStep, ...], host: CaseHost, *, timeout: float) -> Play:
    """Run every step in order; the session id (and the client's stream) in the result."""
    state = Play(host=host, timeout=timeout)
    for i, step in enumerate(steps):
        ahead = steps[i + 1] if i + 1 < len(steps) else None
        if isinstance(step, Say):
            await _say(state, step, wait=not isinstance(ahead, Interrupt))
        elif isinstance(step, Interrupt):
            await _interrupt(state, step)
        elif isinstance(step, Decide):
            await _decide(state, step)
        elif isinstance(step, Advance):
            await _advance(state, step)
        elif isinstance(step, CallTool):
            await _call_tool(state, step)
    if state.session_id is not None:
        await host.settle_all(timeout=timeout)
    return state


async def trajectory_of(state: Play) -> Trajectory:
    """The session's events (and the other sessions of the case) once everything settled."""
    if state.session_id is None:
        return Trajectory(events=())
    events = await state.host.events(state.session_id)
    others = await state.host.others(state.session_id)
    return Trajectory(events=tuple(events), streamed=tuple(state.streamed), others=others)


async def _send(state: Play, text: str) -> int:
    """Start the session or follow it up; the index of the message's event."""
    runtime = state.host.runtime
    if state.session_id is None:
        accepted = await runtime.start_session(text, principal=EVAL_PRINCIPAL, source="eval")
        state.session_id = accepted.session_id
    else:
        assert state.token is not None
        start = len(await state.host.events(state.session_id))
        accepted = await runtime.follow_up(
            state.session_id, state.token, text, principal=EVAL_PRINCIPAL, source="eval"
        )
        state.token = accepted.continuation_token
        return start
    state.token = accepted.continuation_token
    return 0


async def _say(state: Play, step: Say, *, wait: bool) -> None:
    if state.session_id is not None:
        # A message follows the previous turn, as a user would (interrupts say so).
        await state.host.settle(state.session_id, timeout=state.timeout)
    await _send(state, step.text)
    assert state.session_id is not None
    if step.cut_after is not None:
        await _read_with_a_cut(state, step.cut_after)
    elif wait:
        await state.host.settle(state.session_id, timeout=state.timeout)


async def _read_with_a_cut(state: Play, cut_after: int) -> None:
    """Read the stream like a client, drop the connection after `cut_after` events of this
    read (whatever else that read returned is lost), then resume from the last index kept."""
    assert state.session_id is not None
    runtime = state.host.runtime
    pos = state.streamed[-1].index + 1 if state.streamed else 0
    kept = 0
    while kept < cut_after:
        batch = await runtime.follow_events(
            state.session_id, principal=EVAL_PRINCIPAL, start=pos, timeout=state.timeout
        )
        if not batch:
            break
        take = batch[: cut_after - kept]
        state.streamed.extend(take)
        kept += len(take)
        pos = take[-1].index + 1
    # Reconnect with startIndex = last seen + 1 and read until the turn settles.
    settled = await state.host.settle(state.session_id, timeout=state.timeout)
    state.streamed.extend(e for e in settled if e.index >= pos)


async def _interrupt(state: Play, step: Interrupt) -> None:
    if state.session_id is None:
        raise StepError("interrupt() needs a message before it")
    events = await state.host.events(state.session_id)
    last_message = max((e.index for e in events if e.type == "message.received"), default=0)
    await state.host.wait_for(
        state.session_id, step.after, start=last_message, timeout=state.timeout
    )
    await _send(state, step.text)
    await state.host.settle(state.session_id, timeout=state.timeout)


async def _decide(state: Play, step: Decide) -> None:
    if state.session_id is None:
        raise StepError(f"{step.decision}() needs a message before it")
    await state.host.settle(state.session_id, timeout=state.timeout)
    await state.host.wait_unleased(state.session_id, timeout=state.timeout)
    pending = await state.host.runtime.approvals(state.session_id, principal=EVAL_PRINCIPAL)
    chosen = next((p for p in pending if step.tool in (None, p.tool_name)), None)
    if chosen is None:
        what = f"a parked call of {step.tool}" if step.tool else "a parked call"
        names = ", ".join(p.tool_name for p in pending) or "none"
        raise StepError(f"{step.decision}(): no {what} to decide (parked: {names})")
    await state.host.runtime.resolve_approval(
        state.session_id, chosen.call_id, step.decision, principal=EVAL_PRINCIPAL
    )
    await state.host.settle(state.session_id, timeout=state.timeout)


async def _advance(state: Play, step: Advance) -> None:
    try:
        delta = parse_duration(step.duration)
    except ValueError as exc:
        raise StepError(f"advance({step.duration!r}): {exc}") from None
    clock = state.host.clock
    target = clock.now() + delta
    await state.host.settle_all(timeout=state.timeout)
    while True:
        due = clock.pending()
        if not due or due[0] > target:
            break
        await clock.advance_to(due[0])
        await state.host.settle_all(timeout=state.timeout)
    await clock.advance_to(target)


async def _call_tool(state: Play, step: CallTool) -> None:
    if state.session_id is None:
        raise StepError("call_tool() needs a message before it")
    await state.host.settle(state.session_id, timeout=state.timeout)
    await state.host.wait_unleased(state.session_id, timeout=state.timeout)
    await state.host.runtime.call_tool(
        step.name, step.arguments, principal=EVAL_PRINCIPAL, session_id=state.session_id
    )
