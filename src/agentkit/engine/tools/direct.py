"""Direct tool calls: a server tool run with no model turn (`POST /v1/tools/:name`).

With a session, the call shares the turn lease (so it answers `session_busy` while a turn
runs) and is recorded on the stream as `actions.requested` + `action.result` with no
`turnId`. Agent-execution tools are refused: they run only inside a session workspace.

A call the tool's `needs_approval` rule holds for never runs at once: without a session it
is refused (`403 approval_required`); with one it is parked exactly like a model-requested
call (`actions.requested` + `action.approval_requested`, no `turnId`), and the decision
recorded through the approvals route runs it (or records the denial) as `action.result`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from agentkit.authoring.contexts import HostServices
from agentkit.engine.agent_parts import AgentParts
from agentkit.engine.folds.pending_approvals import DENIED
from agentkit.engine.ports import SessionPorts
from agentkit.engine.service import ToolCallOutcome
from agentkit.engine.tools.calls import (
    CallContext,
    InvalidToolInput,
    Outcome,
    call_workdir,
    invoke,
    session_info,
)
from agentkit.engine.turn.lease import keep_lease
from agentkit.errors import BadRequest, Conflict, Forbidden, NotFound
from agentkit.events import (
    ActionApprovalRequested,
    ActionCall,
    ActionResult,
    ActionsRequested,
    draft,
)
from agentkit.sessions import SessionRecord, SessionStatus, fold_status


class DirectHost(Protocol):
    """What a direct call takes from the runtime, read at each call (a reload swaps the
    parts)."""

    @property
    def parts(self) -> AgentParts: ...

    @property
    def host(self) -> HostServices: ...

    @property
    def state_root(self) -> Path: ...


def new_call_id(tool_name: str) -> str:
    """`tool_<name>_<random>`."""
    return f"tool_{tool_name}_{secrets.token_hex(6)}"


class DirectCalls:
    """Tool calls made over the API, outside any model turn."""

    def __init__(self, ports: SessionPorts, runtime: DirectHost) -> None:
        self.ports = ports
        self.rt = runtime

    async def call(
        self, tool_name: str, tool_input: Mapping[str, Any], record: SessionRecord | None
    ) -> ToolCallOutcome:
        authored = {n: e for n, e in self.rt.parts.tools.items() if e.spec is not None}
        entry = authored.get(tool_name)
        if entry is None:
            raise NotFound(f"no tool named {tool_name!r}", available=sorted(authored))
        if entry.execution == "agent":
            raise BadRequest(
                f"{tool_name!r} is an agent-execution tool; it runs only inside a session turn",
                code="agent_execution_tool",
            )
        try:
            args, value = entry.validate(tool_input)
        except InvalidToolInput as exc:
            raise BadRequest(str(exc), code="invalid_input") from None
        call_id = new_call_id(tool_name)
        approval = entry.needs_approval(value)
        if approval and record is None:
            raise Forbidden(
                f"{tool_name!r} needs approval before it runs; call it with a sessionId to "
                "park it on that session, then approve it through the session's approvals",
                code="approval_required",
            )
        if record is None:
            outcome = await self._run(entry, value, call_id, None)
            return ToolCallOutcome(
                tool_name, call_id, outcome.is_error, _shown(outcome), outcome.duration_ms
            )
        holder = "tool:" + call_id
        store = self.ports.store
        if not await store.acquire_lease(record.id, holder, self.ports.lease_ttl):
            raise Conflict("a turn is running in this session", code="session_busy")
        # The tool may run longer than the lease lasts (its timeout is separate): renewed
        # for the whole call, so no turn is accepted alongside it.
        renewer = asyncio.create_task(keep_lease(store, record.id, holder, self.ports.lease_ttl))
        try:
            if fold_status(await store.read(record.id)) == SessionStatus.RUNNING:
                raise Conflict("a turn is running in this session", code="session_busy")
            call = ActionCall(call_id=call_id, tool_name=tool_name, arguments=args)
            if approval:
                parked = ActionApprovalRequested(
                    call_id=call_id, tool_name=tool_name, arguments=args
                )
                await self.ports.record(
                    record, [draft(ActionsRequested(actions=[call])), draft(parked)]
                )
                return ToolCallOutcome(tool_name, call_id, False, None, 0, pending_approval=True)
            await self.ports.record(record, [draft(ActionsRequested(actions=[call]))])
            outcome = await self._run(entry, value, call_id, record)
            await self.ports.record(record, [draft(_result(call_id, tool_name, outcome))])
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await store.release_lease(record.id, holder)
        return ToolCallOutcome(
            tool_name, call_id, outcome.is_error, _shown(outcome), outcome.duration_ms
        )

    async def run_decided(
        self,
        record: SessionRecord,
        call_id: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        decision: str,
        holder: str,
    ) -> None:
        """Run (or refuse) a parked direct call once its decision is recorded.

        The caller holds the session's lease as `holder`; it is renewed while the tool runs.
        """
        entry = self.rt.parts.tools.get(tool_name)
        if decision != "approve" or entry is None:
            error = DENIED if decision != "approve" else f"no tool named {tool_name!r}"
            outcome = Outcome(True, error=error)
        else:
            renewer = asyncio.create_task(
                keep_lease(self.ports.store, record.id, holder, self.ports.lease_ttl)
            )
            try:
                try:
                    _, value = entry.validate(arguments)
                except InvalidToolInput as exc:
                    outcome = Outcome(True, error=str(exc))
                else:
                    outcome = await self._run(entry, value, call_id, record)
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
        await self.ports.record(record, [draft(_result(call_id, tool_name, outcome))])

    async def _run(self, entry: Any, value: Any, call_id: str, record: SessionRecord | None) -> Any:
        workdir = call_workdir(self.rt.state_root, call_id)
        ctx = CallContext(
            session=session_info(record) if record is not None else None,
            host=self.rt.host,
            call_id=call_id,
            tool_name=entry.name,
            workdir=workdir,
        )
        timeout = entry.timeout or self.rt.parts.manifest.agent.tool_timeout
        try:
            return await invoke(entry, value, ctx, timeout)
        finally:
            ctx.cleanup()


def _result(call_id: str, tool_name: str, outcome: Outcome) -> ActionResult:
    return ActionResult(
        call_id=call_id,
        tool_name=tool_name,
        is_error=outcome.is_error,
        result=outcome.result,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
    )


def _shown(outcome: Any) -> Any:
    return outcome.error if outcome.is_error else outcome.result
