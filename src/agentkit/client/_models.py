"""What the client's calls return: small frozen records read from the JSON answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Accepted:
    """A message was accepted; its turn runs in the background."""

    session_id: str
    continuation_token: str
    turn_id: str
    playground_url: str | None = None
    trace_url: str | None = None

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Accepted:
        return cls(
            session_id=str(raw["sessionId"]),
            continuation_token=str(raw["continuationToken"]),
            turn_id=str(raw["turnId"]),
            playground_url=raw.get("playgroundUrl"),
            trace_url=raw.get("traceUrl"),
        )


@dataclass(frozen=True, slots=True)
class Approval:
    """A tool call parked on a human decision."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    turn_id: str | None
    requested_at: str

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Approval:
        return cls(
            call_id=str(raw["callId"]),
            tool_name=str(raw["toolName"]),
            arguments=dict(raw.get("arguments") or {}),
            turn_id=raw.get("turnId"),
            requested_at=str(raw.get("requestedAt", "")),
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The outcome of a direct tool call."""

    tool_name: str
    call_id: str
    is_error: bool
    result: Any
    duration_ms: int

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ToolCall:
        return cls(
            tool_name=str(raw["toolName"]),
            call_id=str(raw["callId"]),
            is_error=bool(raw.get("isError")),
            result=raw.get("result"),
            duration_ms=int(raw.get("durationMs") or 0),
        )


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of `GET /v1/sessions`."""

    session_id: str
    channel_id: str
    mode: str
    status: str
    principal: str | None
    created_at: str
    updated_at: str
    continuation_key: str | None = None
    cost_usd: float | None = None  # dollars so far; None when a price is unknown

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SessionSummary:
        return cls(
            session_id=str(raw["sessionId"]),
            channel_id=str(raw["channelId"]),
            mode=str(raw["mode"]),
            status=str(raw["status"]),
            principal=raw.get("principal"),
            created_at=str(raw["createdAt"]),
            updated_at=str(raw["updatedAt"]),
            continuation_key=raw.get("continuationKey"),
            cost_usd=raw.get("costUsd"),
        )
