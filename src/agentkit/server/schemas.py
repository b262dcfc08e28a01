"""Wire models of the HTTP API: request bodies are validated here (400 on violations) and
every response model doubles as the OpenAPI schema of its route. JSON keys are camelCase,
as in the reference API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentkit.sessions import SessionStatus

MAX_MESSAGE_CHARS = 200_000


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class _Request(_Wire):
    # A misspelt key ({"mesage": ...}, or a tool's argument beside "input" instead of in it)
    # is a 400 naming it, not silently dropped.
    model_config = ConfigDict(extra="forbid")


class _Reply(_Wire):
    # Response models are built with their route (routes are built on first use, see
    # `server.routing`) or on first use, not when a cold start imports this module.
    model_config = ConfigDict(defer_build=True)


class ErrorBody(_Wire):
    """Every error response: `{ok:false, error:"<code>", message?}` plus optional details."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
    ok: Literal[False] = False
    error: str
    message: str | None = None


WorkspaceFiles = dict[str, str]


class StartSessionBody(_Request):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    workspace_files: WorkspaceFiles | None = Field(
        default=None, description="Files (relative path -> text) written before the turn."
    )


class FollowUpBody(_Request):
    continuation_token: str = Field(min_length=1, max_length=512)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    workspace_files: WorkspaceFiles | None = None
    on_busy: Literal["interrupt", "queue", "reject"] | None = Field(
        default=None,
        description=(
            "A busy session: interrupt its turn, queue behind it, or 409 `session_busy`. "
            "Default: the agent's `on_busy` (interrupt unless configured)."
        ),
    )


class SessionAccepted(_Reply):
    """A message was accepted; the turn runs in the background."""

    ok: Literal[True] = True
    session_id: str
    continuation_token: str
    turn_id: str
    playground_url: str | None = Field(description="Null when the playground is off.")
    trace_url: str


class EventOut(_Reply):
    """One event of a session's stream (one NDJSON line)."""

    type: str
    index: int
    session_id: str
    turn_id: str | None = None
    at: str
    data: dict[str, Any]


class StopResult(_Reply):
    ok: Literal[True] = True
    stopped: bool = Field(description="False when no turn was running.")


class SessionSummary(_Reply):
    session_id: str
    channel_id: str
    mode: Literal["chat", "task"]
    status: SessionStatus = Field(description="Folded from the session's events.")
    principal: str | None
    continuation_key: str | None = None
    created_at: str
    updated_at: str
    cost_usd: float | None = Field(
        default=None, description="Dollars spent so far; absent when a price is unknown."
    )


class SessionList(_Reply):
    ok: Literal[True] = True
    sessions: list[SessionSummary]
    cursor: str | None = Field(description="Pass back as `cursor` for the next page.")


class ApprovalOut(_Reply):
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    turn_id: str | None
    requested_at: str


class ApprovalList(_Reply):
    ok: Literal[True] = True
    approvals: list[ApprovalOut]


class DecisionBody(_Request):
    decision: Literal["approve", "deny"]


class DecisionResult(_Reply):
    ok: Literal[True] = True
    call_id: str
    decision: Literal["approve", "deny"]


class ToolCallBody(_Request):
    input: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None


class ToolCallResult(_Reply):
    ok: Literal[True] = True
    tool_name: str
    call_id: str
    is_error: bool
    result: Any = None
    duration_ms: int


class ToolCallPending(_Reply):
    """A direct call parked for approval on its session (answered with 202)."""

    ok: Literal[True] = True
    tool_name: str
    call_id: str
    status: Literal["pending_approval"] = "pending_approval"


class Health(_Reply):
    ok: Literal[True] = True
    status: Literal["ok"] = "ok"


class Meta(_Reply):
    ok: Literal[True] = True
    name: str
    slug: str
    dev: bool
    base_path: str = Field(description="'' in single mode, '/<slug>' in multi mode.")
    playground: bool
    docs: bool
    host: str = Field(
        default="local", description="Where the agent runs: local, aws or aws-emulated."
    )


class LogLine(_Reply):
    seq: int
    at: str
    level: str
    logger: str
    message: str


class LogPage(_Reply):
    ok: Literal[True] = True
    lines: list[LogLine]
    cursor: int = Field(description="Pass back as `after` to get only newer lines.")


class AgentOut(_Reply):
    slug: str
    name: str
    base_path: str
    playground_url: str | None


class AgentIndex(_Reply):
    ok: Literal[True] = True
    mode: Literal["single", "multi"]
    agents: list[AgentOut]
