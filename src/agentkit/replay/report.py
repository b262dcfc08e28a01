"""What a replay found: the divergences from the recording, each at an event index.

The JSON shape (`ReplayReport.to_dict`, what `agentkit replay --json` prints)::

    {"ok": false, "sessionId": "...", "mode": "cassette" | "model", "model": "test",
     "turns": 2, "calls": 3, "served": 2,
     "divergences": [{"index": 7, "kind": "tool_missing", "reason": "...",
                      "tool": "get_weather", "callId": "...", "replayIndex": 9}]}

`index` is the recorded event the divergence is about; `replayIndex`, when present, the
replayed one. `kind` is one of `KINDS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "Divergence", "ReplayReport"]

KINDS = (
    "tool_missing",  # the recording called a tool the new bundle does not have
    "schema_rejected",  # the new input schema rejects the recorded arguments
    "approval_added",  # the call now needs approval; the recording ran it at once
    "approval_removed",  # the recording parked the call; now it runs at once
    "subagent_missing",  # the recording delegated to a subagent that is gone
    "unrecorded_call",  # (--model) a call the recording has no result for
    "call_not_made",  # (--model) a recorded call the model did not make this time
    "not_replayed",  # the replay never reached a recorded call
    "turn_outcome",  # a turn ended differently (completed in one, failed in the other)
    "replay_stopped",  # the replay could not go on (timed out, an input was refused)
)


@dataclass(frozen=True, slots=True)
class Divergence:
    index: int
    kind: str
    reason: str
    tool: str | None = None
    call_id: str | None = None
    replay_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "kind": self.kind, "reason": self.reason}
        if self.tool is not None:
            out["tool"] = self.tool
        if self.call_id is not None:
            out["callId"] = self.call_id
        if self.replay_index is not None:
            out["replayIndex"] = self.replay_index
        return out

    def line(self) -> str:
        return f"event {self.index}: {self.kind}: {self.reason}"


@dataclass(slots=True)
class ReplayReport:
    session_id: str
    mode: str
    model: str
    turns: int
    calls: int
    served: int
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.divergences

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "sessionId": self.session_id,
            "mode": self.mode,
            "model": self.model,
            "turns": self.turns,
            "calls": self.calls,
            "served": self.served,
            "divergences": [d.to_dict() for d in self.divergences],
        }

    def lines(self) -> list[str]:
        head = (
            f"session {self.session_id}: {self.turns} turn(s), {self.calls} call(s),"
            f" {self.served} recorded result(s) served"
        )
        if self.ok:
            return [head, "no divergence"]
        return [head, *(d.line() for d in self.divergences)]
