"""What the `/v1/mcp` tools do: `ask`, `check` and `call_tool` over an `AgentService`.

Nothing here knows MCP; `mcp.endpoint` turns these results into tool results. A wait is
bounded (`MAX_WAIT`) so one request always ends inside API Gateway's 29 s and Lambda's
limits: a longer turn answers `running`, and the caller polls with `check`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentkit.engine.service import AgentService
from agentkit.errors import BadRequest, InvalidId, NotFound
from agentkit.events import Event, EventType
from agentkit.sessions import Principal, SessionStatus, fold_status, validate_session_id

DEFAULT_WAIT = 25.0
MAX_WAIT = 25.0  # under API Gateway's 29 s integration timeout, with room to answer
Status = Literal["completed", "running", "waiting_approval", "failed"]


class _Input(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class AskInput(_Input):
    message: str = Field(min_length=1, max_length=200_000, description="What to ask the agent.")
    session_id: str | None = Field(None, description="Continue this session (from an answer).")
    continuation_token: str | None = Field(
        None, description="The token of the last answer; required with sessionId."
    )
    wait_seconds: float = Field(
        DEFAULT_WAIT, ge=0, description=f"How long to wait for the reply (capped at {MAX_WAIT:g})."
    )


class CheckInput(_Input):
    session_id: str = Field(description="The session an earlier `ask` started.")
    wait_seconds: float = Field(
        DEFAULT_WAIT, ge=0, description=f"How long to wait for the turn (capped at {MAX_WAIT:g})."
    )


class CallToolInput(_Input):
    name: str = Field(max_length=200, description="The server tool to run.")
    input: dict[str, Any] = Field(default_factory=dict, description="The tool's input.")
    session_id: str | None = Field(None, description="Record the call on this session.")


class Answer(BaseModel):
    """The structured result of `ask` and `check`."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    status: Status
    session_id: str
    continuation_token: str | None = None
    reply: str | None = None
    error: str | None = None
    pending_approvals: list[dict[str, Any]] | None = None

    def summary(self) -> str:
        """One line of text for clients that read only text content."""
        if self.status == "completed":
            return self.reply or ""
        if self.status == "failed":
            return f"The turn failed: {self.error or 'unknown error'}"
        if self.status == "waiting_approval":
            names = ", ".join(a["toolName"] for a in self.pending_approvals or [])
            return f"Waiting for a human to approve: {names} (session {self.session_id})."
        return f"Still working; call check with sessionId {self.session_id}."

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


def _session_id(raw: str) -> str:
    try:
        return validate_session_id(raw)
    except InvalidId:
        raise NotFound(f"unknown session {raw[:80]!r}", code="session_not_found") from None


def _wait(seconds: float) -> float:
    return max(0.0, min(seconds, MAX_WAIT))


async def ask(service: AgentService, caller: Principal, args: AskInput) -> Answer:
    """Start a session or continue one, then wait (bounded) for the turn."""
    if args.session_id is None:
        accepted = await service.start_session(
            args.message, principal=caller, channel_id="mcp", source="mcp"
        )
    else:
        if not args.continuation_token:
            raise BadRequest("continuationToken is required with sessionId")
        accepted = await service.follow_up(
            _session_id(args.session_id),
            args.continuation_token,
            args.message,
            principal=caller,
            source="mcp",
        )
    answer = await settle(service, caller, accepted.session_id, _wait(args.wait_seconds))
    answer.continuation_token = accepted.continuation_token
    return answer


async def check(service: AgentService, caller: Principal, args: CheckInput) -> Answer:
    """The state of a session's latest turn, waiting (bounded) while it runs."""
    sid = _session_id(args.session_id)
    await service.get_session(sid, principal=caller)  # 404 / 403 before any wait
    return await settle(service, caller, sid, _wait(args.wait_seconds))


async def settle(service: AgentService, caller: Principal, sid: str, wait: float) -> Answer:
    """Follow the session's events until its turn stops running or `wait` runs out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    events = await service.read_events(sid, principal=caller)
    while True:
        status = fold_status(events)
        remaining = deadline - loop.time()
        if status != SessionStatus.RUNNING or remaining <= 0:
            break
        start = events[-1].index + 1 if events else 0
        events.extend(
            await service.follow_events(sid, principal=caller, start=start, timeout=remaining)
        )
    return await _answer(service, caller, sid, status, events)


async def _answer(
    service: AgentService, caller: Principal, sid: str, status: SessionStatus, events: list[Event]
) -> Answer:
    if status == SessionStatus.RUNNING:
        return Answer(status="running", session_id=sid)
    if status == SessionStatus.AWAITING_APPROVAL:
        pending = await service.approvals(sid, principal=caller)
        return Answer(
            status="waiting_approval",
            session_id=sid,
            pending_approvals=[
                {"callId": p.call_id, "toolName": p.tool_name, "arguments": p.arguments}
                for p in pending
            ],
        )
    last = _last_turn_end(events)
    if status == SessionStatus.FAILED or (last is not None and last.type == EventType.TURN_FAILED):
        error = str(last.data.get("error", "")) if last is not None else "session failed"
        return Answer(status="failed", session_id=sid, error=error)
    reply = str(last.data.get("result", "")) if last is not None else ""
    return Answer(status="completed", session_id=sid, reply=reply)


def _last_turn_end(events: list[Event]) -> Event | None:
    for event in reversed(events):
        if event.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            return event
    return None


async def call_tool(
    service: AgentService, caller: Principal, args: CallToolInput
) -> Mapping[str, Any]:
    """The direct tool call route's semantics: server tools only, approvals respected."""
    spec = service.manifest.tool(args.name)
    if spec is None or spec.execution != "server":
        available = sorted(t.name for t in service.manifest.tools if t.execution == "server")
        raise NotFound(
            f"unknown server tool {args.name[:80]!r}", code="tool_not_found", available=available
        )
    sid = _session_id(args.session_id) if args.session_id else None
    outcome = await service.call_tool(args.name, args.input, principal=caller, session_id=sid)
    if outcome.pending_approval:  # parked on the session: approve it like any other call
        return {
            "toolName": outcome.tool_name,
            "callId": outcome.call_id,
            "isError": False,
            "status": "pending_approval",
            "result": None,
            "sessionId": sid,
        }
    return {
        "toolName": outcome.tool_name,
        "callId": outcome.call_id,
        "isError": outcome.is_error,
        "result": outcome.result,
        "durationMs": outcome.duration_ms,
    }
