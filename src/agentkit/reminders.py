"""The stored form of a reminder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.events import now_iso

ReminderStatus = Literal["active", "cancelled", "done", "disarmed"]
ScheduleKind = Literal["delay", "every", "cron", "at"]


@dataclass(frozen=True, slots=True)
class ReminderRecord:
    """A durable reminder. `has_handler` marks the run form, whose handler lives in memory.

    `principal` is who created it (the calling session's owner when a tool made it; None
    when host code did): it is checked again when the reminder fires. `failures` counts
    consecutive delivery errors, which re-arm the reminder with backoff; `last_error` says
    what went wrong last (a delivery error or the run handler's exception).
    """

    id: str
    purpose: str
    channel_id: str
    continuation_token: str
    kind: ScheduleKind
    spec: str  # "20m" for delay/every, a 5-field cron, or an ISO-8601 instant for "at"
    next_fire_at: str | None
    session_id: str | None = None
    prompt: str | None = None
    until: str | None = None
    has_handler: bool = False
    fire_count: int = 0
    status: ReminderStatus = "active"
    reason: str | None = None
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    principal: str | None = None
    created_in: str | None = None  # the session whose tool created it
    failures: int = 0
    last_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "purpose": self.purpose,
            "channelId": self.channel_id,
            "continuationToken": self.continuation_token,
            "kind": self.kind,
            "spec": self.spec,
            "nextFireAt": self.next_fire_at,
            "sessionId": self.session_id,
            "prompt": self.prompt,
            "until": self.until,
            "hasHandler": self.has_handler,
            "fireCount": self.fire_count,
            "status": self.status,
            "reason": self.reason,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "principal": self.principal,
            "createdIn": self.created_in,
            "failures": self.failures,
            "lastError": self.last_error,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ReminderRecord:
        return cls(
            id=str(raw["id"]),
            purpose=str(raw["purpose"]),
            channel_id=str(raw["channelId"]),
            continuation_token=str(raw["continuationToken"]),
            kind=raw["kind"],
            spec=str(raw["spec"]),
            next_fire_at=raw.get("nextFireAt"),
            session_id=raw.get("sessionId"),
            prompt=raw.get("prompt"),
            until=raw.get("until"),
            has_handler=bool(raw.get("hasHandler", False)),
            fire_count=int(raw.get("fireCount", 0)),
            status=raw.get("status", "active"),
            reason=raw.get("reason"),
            created_at=str(raw.get("createdAt") or now_iso()),
            updated_at=str(raw.get("updatedAt") or now_iso()),
            principal=raw.get("principal"),
            created_in=raw.get("createdIn"),
            failures=int(raw.get("failures", 0)),
            last_error=raw.get("lastError"),
        )
