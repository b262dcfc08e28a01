"""Settling the calls a crash left in doubt, before the lost turn is ended.

A call is in doubt when it may have started (its request, or its `action.started`, is
durable) and no result was recorded: the process died before, during or after the side
effect. For each one, in this order:

- the tool has a `reconcile` function: it is asked what happened. A result is recorded as
  the call's result (`outcome: "reconciled"`). `NOT_DONE` from a tool that is not
  idempotent is recorded as an error result saying the call did not complete and was not
  run again (`"reconciled"`: the outcome is known). `UNKNOWN`, `None`, an exception or a
  timeout count as unknown;
- the tool is idempotent (`define_tool(idempotent=True)`) and the outcome is still open
  (no `reconcile`, `NOT_DONE` or unknown): the call runs again with the same arguments and
  the same `ctx.idempotency_key` (`"rerun"`);
- otherwise the error result says the call may have completed and was not run again
  (`"unknown"`), as before.

A call that needs approval and never had one recorded as started did not run; it is never
run from here, whatever the tool declares.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentkit.authoring.contexts import HostServices
from agentkit.authoring.reconcile import InDoubt
from agentkit.engine.agent_parts import AgentParts
from agentkit.engine.folds.conversation import PendingCall, TurnState
from agentkit.engine.turn.closed_calls import IN_DOUBT
from agentkit.events import ActionResult
from agentkit.sessions import SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.tools.calls import CallContext, ToolEntry

log = logging.getLogger("agentkit.engine.reconcile")

NOT_DONE_ERROR = (
    "did not complete before its process stopped (its reconcile found no effect); not re-run"
)
Outcome = Literal["reconciled", "rerun", "unknown"]


class ReconcileHost(Protocol):
    """What settling calls in doubt takes from the runtime: its tools and their context,
    read at each use (the bundle may be reloaded)."""

    @property
    def parts(self) -> AgentParts: ...

    @property
    def host(self) -> HostServices: ...

    @property
    def state_root(self) -> Path: ...


def in_doubt(state: TurnState) -> list[PendingCall]:
    """The open calls of `state` that may have run: requested by the model (durable before
    they ran) or approved and recorded as started. A call still parked, or decided and
    never started, did not run."""
    return [p for p in state.pending.values() if not p.approval_requested or p.started]


class Reconciler:
    """Settles the calls in doubt of a lost turn (see the module docstring)."""

    def __init__(self, host: ReconcileHost) -> None:
        self._host = host

    async def __call__(self, record: SessionRecord, state: TurnState) -> list[ActionResult]:
        calls = in_doubt(state)
        if not calls:
            return []
        parts = self._host.parts
        timeout = parts.manifest.agent.tool_timeout
        return [await self._settle(parts.tools.get(p.tool_name), record, p, timeout) for p in calls]

    async def _settle(
        self, entry: ToolEntry | None, record: SessionRecord, p: PendingCall, default: float
    ) -> ActionResult:
        # Loaded here: a process that only accepts requests never settles a call.
        from pydantic_core import to_jsonable_python

        from agentkit.engine.tools.calls import (
            CallContext,
            InvalidToolInput,
            call_workdir,
            invoke,
            session_info,
        )

        definition = entry.definition if entry is not None else None
        if entry is None or definition is None or entry.execution != "server":
            return _unknown(p)
        if not (definition.idempotent or definition.reconcile is not None):
            return _unknown(p)
        try:
            _, value = entry.validate(p.arguments)
        except InvalidToolInput:
            return _unknown(p)
        if entry.needs_approval(value) and not p.started:
            return _unknown(p)  # it would have parked first: it never ran, and never runs here
        ctx = CallContext(
            session=session_info(record),
            host=self._host.host,
            call_id=p.call_id,
            tool_name=p.tool_name,
            workdir=call_workdir(self._host.state_root, p.call_id),
        )
        timeout = entry.timeout or default
        try:
            why = ""
            if definition.reconcile is not None:
                verdict, why = await _ask(definition.reconcile, value, ctx, timeout)
                if not isinstance(verdict, InDoubt):
                    return _result(
                        p, "reconciled", result=to_jsonable_python(verdict, fallback=str)
                    )
                if not definition.idempotent:
                    if verdict is InDoubt.NOT_DONE:
                        return _result(p, "reconciled", error=NOT_DONE_ERROR)
                    return _unknown(p, why)
            ran = await invoke(entry, value, ctx, timeout)
            return _result(
                p, "rerun", result=ran.result, error=ran.error, duration_ms=ran.duration_ms
            )
        finally:
            ctx.cleanup()


async def _ask(
    fn: Callable[..., Any], value: Any, ctx: CallContext, timeout: float
) -> tuple[Any, str]:
    """`fn`'s answer (`UNKNOWN` when it fails, times out or says nothing) and why."""
    from agentkit.engine.tools.pool import tool_pool

    args = (value, ctx)[: _arity(fn)]
    try:
        if inspect.iscoroutinefunction(fn):
            answer = await asyncio.wait_for(fn(*args), timeout)
        else:
            answer = await asyncio.wait_for(tool_pool().run(fn, *args), timeout)
            if inspect.isawaitable(answer):
                answer = await asyncio.wait_for(answer, timeout)
    except TimeoutError:
        return InDoubt.UNKNOWN, f"reconcile timed out after {timeout:g}s"
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("reconcile of call %s failed: %r", ctx.call_id, exc)
        return InDoubt.UNKNOWN, f"reconcile failed: {type(exc).__name__}: {exc}"
    if answer is None:
        return InDoubt.UNKNOWN, "reconcile returned None"
    return answer, ""


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def _unknown(p: PendingCall, why: str = "") -> ActionResult:
    return _result(p, "unknown", error=f"{IN_DOUBT} ({why})" if why else IN_DOUBT)


def _result(
    p: PendingCall,
    outcome: Outcome,
    *,
    result: Any = None,
    error: str | None = None,
    duration_ms: int | None = None,
) -> ActionResult:
    return ActionResult(
        call_id=p.call_id,
        tool_name=p.tool_name,
        is_error=error is not None,
        result=result,
        error=error,
        duration_ms=duration_ms,
        outcome=outcome,
    )


__all__ = ["NOT_DONE_ERROR", "ReconcileHost", "Reconciler", "in_doubt"]
