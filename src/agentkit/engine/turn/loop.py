"""The turn loop: model steps and tool calls, recorded as events, until a final answer.

Order of events in a turn: `turn.started`, then per step `step.started`, `reasoning.*`,
`message.*`, `actions.requested`, `action.result`s, `step.completed`, and at the end
`turn.completed` or `turn.failed` followed by `session.waiting` (chat) or
`session.completed`/`session.failed` (task). A step whose calls need approval records
`action.approval_requested` and `step.completed`, then the turn parks; a resume records
the decided calls' results and carries on with the next step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from agentkit.authoring.context_options import parse_context_options
from agentkit.authoring.contexts import ToolContext
from agentkit.authoring.loop_options import parse_loop_options
from agentkit.costs import add_costs, agent_prices
from agentkit.engine.folds.conversation import TurnState, fold_conversation
from agentkit.engine.telemetry import NO_SPAN, AgentSpan, agent_span, tool_span
from agentkit.engine.tools.agent_tool import run_agent_tool
from agentkit.engine.tools.builtins import TASK, TaskInput
from agentkit.engine.tools.calls import (
    CallContext,
    Outcome,
    ToolEntry,
    call_workdir,
    elapsed_ms,
    invoke,
    session_info,
)
from agentkit.engine.tools.task_start import start_task
from agentkit.engine.turn.budget import (
    BudgetCheck,
    GuardedModel,
    SessionSpend,
    Spend,
    limits_spend,
    parse_budget,
    session_spend,
    tokens,
)
from agentkit.engine.turn.closed_calls import IN_DOUBT
from agentkit.engine.turn.compaction import ContextKeeper
from agentkit.engine.turn.continuation import defer_unless_fits, resume_continued, stop_to_continue
from agentkit.engine.turn.deadline import (
    DEFAULT_MAX_TURN_SECONDS,
    Continuation,
    ContinueTurn,
    turn_limit_message,
)
from agentkit.engine.turn.decided import park_on_budget, resume_decided
from agentkit.engine.turn.deps import (
    Planned,
    TurnDeps,
    error_result,
    plan_call,
    tool_result,
    turn_began,
)
from agentkit.engine.turn.ending import session_failed
from agentkit.engine.turn.loop_guard import LOOP_DETECTED, LoopDetected, LoopGuard, stop_looping
from agentkit.engine.turn.preempt import await_preemptible, stop_error_of
from agentkit.engine.turn.step import RecordingSink, StepOutput, model_step
from agentkit.engine.turn.subagents import run_subagent
from agentkit.errors import LeaseLost, ModelError, RunError, TurnInterrupted
from agentkit.events import (
    ActionApprovalRequested,
    ActionCall,
    ActionResult,
    ActionsRequested,
    Payload,
    SessionCompleted,
    SessionWaiting,
    StepCompleted,
    StepStarted,
    SubagentCalled,
    SubagentCompleted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from agentkit.models.base import ModelRequest
from agentkit.sessions import conversation_key

START_FLUSH = 0.02


class TurnRunner:
    """Runs (or resumes) one turn to its end or to a parked approval."""

    def __init__(self, deps: TurnDeps, state: TurnState, span: AgentSpan = NO_SPAN) -> None:
        self.d = deps
        self.state = state
        self.span = span  # this invocation's `invoke_agent` span (engine.telemetry)
        self.usage = state.usage
        self.queued: list[Payload] = []
        self.open: dict[str, ActionCall] = {}  # requested in this run, no result recorded yet
        self.executing: set[str] = set()  # calls whose tool began running in this run
        self.cancel_signal = threading.Event()  # `ctx.cancelled` of this turn's tool calls
        self._order = asyncio.Lock()
        deps.recorder.log = deps.events
        options = deps.manifest.agent.options
        self.prices = agent_prices(options)
        self.cost: float | None = state.cost_usd
        budget = parse_budget(options.get("budget"))
        # With no turn or session limit, what was spent decides nothing: not added up.
        spend = (
            session_spend(deps.events, state.turn_id)
            if limits_spend(budget)
            else SessionSpend(Spend(), Spend(), 0, 0)
        )
        self.last_step = spend.last_step  # the estimate of what the next step spends
        self.budget = BudgetCheck(budget, spend)
        # Subagents running right now, by call id: parallel ones share the turn's budget,
        # so each budget check counts what all of them have spent so far.
        self.subagents_running: dict[str, GuardedModel] = {}
        self.max_seconds = float(options.get("max_turn_seconds") or DEFAULT_MAX_TURN_SECONDS)
        self.began = turn_began(deps.events, state.turn_id) or deps.clock()
        self.progressed = False  # whether this invocation started a step or a call
        self.continued: Continuation | None = None  # set when the turn stopped to continue
        self.session_info = session_info(deps.session)  # what each tool call is told
        self.loop = LoopGuard(parse_loop_options(options), deps.events, state.turn_id)
        # Fits each step's request into the model's context window (engine.turn.compaction).
        self.context = ContextKeeper(
            parse_context_options(options),
            deps.model,
            deps.resolve_model,
            self.prices,
            deps.events,
            self.emit,
            deps.interrupted,
        )

    # ---- recording -----------------------------------------------------------------

    async def emit(self, *payloads: Payload) -> None:
        """Record queued payloads, then these, as one batch. Batches land in call order."""
        async with self._order:
            batch = [*self.queued, *payloads]
            self.queued = []
            if not batch:
                return
            if self.span.recording:
                for p in batch:
                    self.span.observe(p)
            for p in batch:
                self.loop.observe(p)
                if isinstance(p, ActionsRequested):
                    self.open.update((a.call_id, a) for a in p.actions)
                elif isinstance(p, ActionResult):
                    self.open.pop(p.call_id, None)
            await self.d.recorder.emit(*batch)

    # ---- the loop ------------------------------------------------------------------

    async def run(self) -> None:
        """Drive the turn; every failure ends in `turn.failed`, never an exception."""
        final: StepOutput | None = None
        try:
            if not self.state.started:
                self.queued.append(TurnStarted(model=self.d.model.id))
            if not await self.resume():
                return  # parked on an approval the continued step asked for
            while True:
                out = await self.step()
                if out is None:
                    return  # parked on an approval
                if not out.calls:
                    final = out
                    break
        except LeaseLost:
            raise  # another worker owns the turn now: write nothing more
        except ContinueTurn as exc:
            await stop_to_continue(self, exc.marker)
            return
        except TurnInterrupted as exc:
            # A pause or kill says so in the turn's error (and a kill in the task's end).
            reason = await stop_error_of(self.d.recorder, self.d.switch, str(exc))
            self.span.interrupted(reason)
            await self.fail(reason)
            return
        except LoopDetected as exc:
            await self.fail(LOOP_DETECTED, exc.evidence)
            return
        except (ModelError, RunError) as exc:
            await self.fail(str(exc))
            return
        except Exception as exc:  # an engine bug still ends the turn visibly
            await self.fail(f"internal error: {type(exc).__name__}: {exc}")
            return
        await self.complete(final.text)

    async def resume(self) -> bool:
        """Pick up a continued turn, or one whose approvals were decided; False when it
        parked again."""
        if self.d.resume is not None:
            return await resume_continued(self, self.d.resume)
        if self.state.resumable:
            await self.resume_decided()
        return True

    async def step(self) -> StepOutput | None:
        limit = self.d.max_steps or self.d.manifest.agent.max_steps
        if self.state.steps >= limit:
            raise RunError(
                f"the turn reached max_steps ({limit}) without a final answer;"
                " raise max_steps in agent/agent.py or simplify the task"
            )
        if await self.d.interrupted():
            raise TurnInterrupted()
        if self.d.clock() - self.began > self.max_seconds:
            raise RunError(turn_limit_message(self.max_seconds))
        if self.d.deadline is not None and not self.d.deadline.step_fits():
            raise ContinueTurn(Continuation(self.state.steps))
        verdict = self.budget.verdict(Spend(tokens(self.usage), self.cost), self.last_step)
        if verdict.exceeded is not None:
            await park_on_budget(self, verdict.exceeded)
            return None
        self.state.steps += 1
        self.progressed = True
        number = self.state.steps
        started = time.perf_counter()
        if all(isinstance(p, TurnStarted) for p in self.queued):
            # Nothing the model must see is waiting: record `step.started` lazily (see stream).
            self.queued.append(StepStarted(step=number))
        else:
            # Tool results are waiting; the conversation is folded from recorded events.
            await self.emit(StepStarted(step=number))
        system = self.d.system if verdict.note is None else f"{self.d.system}\n\n{verdict.note}"
        request = ModelRequest(
            system=system,
            messages=fold_conversation(self.d.events),
            tools=[e.schema() for e in self.d.tools.values()],
        )
        fitted = await self.context.fit(request)  # may record a `context.compacted`
        request = fitted.request
        self.usage = self.usage + fitted.usage
        self.cost = add_costs(self.cost, fitted.cost_usd)
        sink = RecordingSink(self.emit)
        out = await self.stream(request, sink)
        self.usage = self.usage + out.usage
        step_cost = self.prices.cost(self.d.model.id, out.usage)
        self.cost = add_costs(self.cost, step_cost)
        self.last_step = Spend(tokens(out.usage), step_cost)
        closing = sink.closing(out)

        def done() -> StepCompleted:  # built when recorded: its duration is up to then
            return StepCompleted(
                step=number,
                duration_ms=elapsed_ms(started),
                usage=out.usage,
                stop_reason=out.stop_reason,
                cost_usd=step_cost,
            )

        if not out.calls:
            self.queued.extend(closing)
            self.queued.append(done())
            return out
        plans = [self.plan(c) for c in out.calls]
        await self.emit(*closing, ActionsRequested(actions=[p.call for p in plans]))
        if self.loop.tripped is not None:
            await stop_looping(self, self.loop.tripped, plans, done())
            return None
        runnable = [p for p in plans if not p.needs_approval]
        parked = [p for p in plans if p.needs_approval and p.error is None]
        if self.d.deadline is not None:  # (only a host whose invocations end defers)
            defer_unless_fits(self, runnable, parked, done())
        await self.run_calls(runnable)
        return await self.end_step(parked, done(), out)

    async def end_step(
        self, parked: list[Planned], done: StepCompleted, out: StepOutput
    ) -> StepOutput | None:
        """After a step's calls ran: park on the approvals it asked for, or go on."""
        if parked and await self.d.interrupted():
            raise TurnInterrupted()  # a stop during the step's tools wins over parking
        if parked:
            approvals = [
                ActionApprovalRequested(
                    call_id=p.call.call_id, tool_name=p.call.tool_name, arguments=p.call.arguments
                )
                for p in parked
            ]
            await self.emit(*approvals, done)
            return None
        self.queued.append(done)
        return out

    async def stream(self, request: ModelRequest, sink: RecordingSink) -> StepOutput:
        """Stream in a task of its own, so a local stop can cancel a blocked read.

        `step.started` (and whatever else is queued) is recorded with the step's first
        output, or after `START_FLUSH` seconds if the model is slower than that: a fast step
        costs one write fewer, a slow one still shows on the stream at once."""
        sid = self.d.session.id
        task = start_task(model_step(self.d.model, request, sink, self.d.interrupted))
        # A step that never waited is done already (see `start_task`): nothing to cancel,
        # nothing to flush early.
        waits = not task.done()
        flushes: list[asyncio.Task[None]] = []
        if waits:
            self.d.turns.streaming(sid, task)
            timer = asyncio.get_running_loop().call_later(
                START_FLUSH, lambda: flushes.append(asyncio.ensure_future(self.emit()))
            )
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or not current.cancelling()):
                raise TurnInterrupted() from None
            raise
        finally:
            if waits:
                timer.cancel()
                if flushes:
                    await flushes[0]
                self.d.turns.streamed(sid)

    def plan(self, call: Any) -> Planned:
        return plan_call(self.d.tools, call)

    async def run_calls(self, plans: list[Planned], *, decided: bool = False) -> None:
        """Run calls concurrently; each result is recorded as soon as it is known.

        An interrupt while they run sets `ctx.cancelled`, gives them `stop_grace` seconds,
        then cancels the rest (their results: in doubt) and ends the turn interrupted.
        Calls a human `decided` on start even when an interrupt came first."""
        if not plans:
            return
        self.progressed = True
        if not decided and await self.d.interrupted():
            await self.emit(*[error_result(p.call, "turn interrupted") for p in plans])
            raise TurnInterrupted()

        async def one(p: Planned, *, queue: bool) -> None:
            if p.error is not None or p.entry is None:
                result = error_result(p.call, p.error or "tool unavailable")
                with tool_span(p.call.tool_name, p.call.call_id, p.call.arguments) as span:
                    span.result(True, error=result.error)
            else:
                self.executing.add(p.call.call_id)
                result = tool_result(p.call, await self.execute(p.entry, p.call, p.value))
            if queue:
                self.queued.append(result)
            else:
                await self.emit(result)

        # One call: its result rides in the same write as the step boundary after it.
        # Durability is the same: nothing observable happens in between.
        single = len(plans) == 1
        await self.preemptible([one(p, queue=single) for p in plans])

    async def preemptible(self, calls: list[Coroutine[Any, Any, None]]) -> None:
        """Await `calls` as tasks, watching for an interrupt (see `run_calls`)."""
        await await_preemptible(calls, self.d.interrupted, self.d.stop_grace, self.cancel_signal)

    async def execute(self, entry: ToolEntry, call: ActionCall, value: Any) -> Outcome:
        """Run one call (the turn's or a subagent's) in its `execute_tool` span."""
        with tool_span(call.tool_name, call.call_id, call.arguments) as span:
            outcome = await self.run_tool(entry, call, value)
            span.result(outcome.is_error, outcome.result, outcome.error)
            return outcome

    async def run_tool(self, entry: ToolEntry, call: ActionCall, value: Any) -> Outcome:
        timeout = entry.timeout or self.d.manifest.agent.tool_timeout
        s = self.d.session
        if entry.execution == "agent" and entry.spec is not None and entry.spec.ref is not None:
            await asyncio.to_thread(self.d.prepare_workspace)
            return await run_agent_tool(
                entry.spec.ref.module,
                entry.spec.ref.attribute,
                entry.spec.ref.path,
                call.arguments,
                workspace=self.d.workspace,
                project_root=self.d.project_root,
                timeout=timeout,
                call_id=call.call_id,
                env=entry.spec.env,
                session={
                    "id": s.id,
                    "channel_id": s.channel_id,
                    "mode": s.mode,
                    "principal": s.principal,
                    "continuation_key": conversation_key(s),
                },
            )
        workdir = call_workdir(self.d.state_root, call.call_id)
        ctx = CallContext(
            session=replace(self.session_info, abs=dict(self.d.abs)),  # its own arms dict
            host=self.d.host,
            call_id=call.call_id,
            tool_name=call.tool_name,
            workdir=workdir,
            cancelled=self.cancel_signal,
        )
        try:
            if entry.name == TASK and entry.spec is None:
                return await self.delegate(value, ctx)
            return await invoke(entry, value, ctx, timeout)
        finally:
            ctx.cleanup()

    async def delegate(self, value: TaskInput, ctx: ToolContext) -> Outcome:
        started = time.perf_counter()
        spec = next((s for s in self.d.manifest.subagents if s.name == value.subagent), None)
        if spec is None:
            names = ", ".join(s.name for s in self.d.manifest.subagents)
            return Outcome(True, error=f"unknown subagent {value.subagent!r}; available: {names}")
        await self.emit(
            SubagentCalled(call_id=ctx.call_id, subagent=spec.name, prompt=value.prompt)
        )
        model = self.d.resolve_model(spec.model) if spec.model else self.d.model
        tools = {n: e for n, e in self.d.tools.items() if n != TASK}
        guarded = GuardedModel(model, lambda _used: self.subagent_allowed())
        self.subagents_running[ctx.call_id] = guarded
        s = self.d.session
        try:
            with agent_span(
                spec.name,
                conversation_id=s.id,
                turn_id=self.state.turn_id,
                principal=s.principal,
                model_id=model.id,
            ) as span:
                result = await run_subagent(
                    spec,
                    value.prompt,
                    guarded,
                    tools,
                    self.execute,
                    self.d.interrupted,
                    self.d.manifest.agent.max_steps,
                )
                span.ended(result.error, result.usage)
        finally:
            self.subagents_running.pop(ctx.call_id, None)
        # (No await between the pop above and this: the spend is never counted twice.)
        self.usage = self.usage + result.usage
        sub_cost = self.prices.cost(model.id, result.usage)
        self.cost = add_costs(self.cost, sub_cost)
        await self.emit(
            SubagentCompleted(
                call_id=ctx.call_id,
                subagent=spec.name,
                result=result.text,
                error=result.error,
                usage=result.usage,
                cost_usd=sub_cost,
            )
        )
        ms = int((time.perf_counter() - started) * 1000)
        if result.error is not None:
            return Outcome(True, error=result.error, duration_ms=ms)
        return Outcome(False, result=result.text, duration_ms=ms)

    def subagent_allowed(self) -> str | None:
        """The budget check for a subagent's next step (it cannot park; it stops): the
        turn's spend so far plus what every subagent still running has spent."""
        spent = Spend(tokens(self.usage), self.cost)
        for running in self.subagents_running.values():
            used = running.usage
            spent = spent.plus(used, self.prices.cost(running.id, used))
        return self.budget.verdict(spent, Spend()).exceeded

    async def resume_decided(self) -> None:
        """Record the results of calls whose approvals were decided, then carry on."""
        await resume_decided(self)

    # ---- endings -------------------------------------------------------------------

    async def complete(self, text: str) -> None:
        end: Payload = (
            SessionCompleted(result=text) if self.d.session.mode == "task" else SessionWaiting()
        )
        await self.emit(TurnCompleted(result=text, usage=self.usage, cost_usd=self.cost), end)

    async def fail(self, error: str, evidence: dict[str, Any] | None = None) -> None:
        """End the turn failed; calls that never got a result are closed with the error."""
        end: Payload = session_failed(error) if self.d.session.mode == "task" else SessionWaiting()
        answered = {p.call_id for p in self.queued if isinstance(p, ActionResult)}
        unanswered = [
            error_result(c, IN_DOUBT if cid in self.executing else error)
            for cid, c in self.open.items()
            if cid not in answered
        ]
        await self.emit(
            *unanswered,
            TurnFailed(error=error, evidence=evidence, usage=self.usage, cost_usd=self.cost),
            end,
        )
