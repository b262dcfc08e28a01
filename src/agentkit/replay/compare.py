"""Where the replayed trajectory parts from the recorded one.

The engine itself finds each divergence as it replays: an unknown tool or rejected input is
the error it records for the call, a new approval is a call it parks. This module reads
the replayed events beside the recorded ones and names what it sees, at the recorded
event's index.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkit.engine.tools.builtins import TASK
from agentkit.events import Event, EventType
from agentkit.project.manifest import Manifest
from agentkit.replay.cassette import NOT_RECORDED, canonical
from agentkit.replay.recording import RecordedCall, Recording
from agentkit.replay.report import Divergence

__all__ = ["Replayed", "divergences"]


@dataclass(slots=True)
class Replayed:
    """The replayed session's events, and what the driver learned playing the inputs."""

    events: list[Event]
    ids: dict[str, str] = field(default_factory=dict)  # recorded call id -> replayed one
    noted: list[Divergence] = field(default_factory=list)  # found while playing inputs


def divergences(
    recording: Recording, replayed: Replayed, manifest: Manifest, *, live: bool
) -> list[Divergence]:
    """Every divergence, in recorded-index order."""
    calls, results, parked = _replayed_calls(replayed.events)
    found = list(replayed.noted)
    noted = {d.call_id for d in found}
    tools = [t.name for t in manifest.tools]
    subagents = {s.name for s in manifest.subagents}
    for c in recording.turn_calls():
        if c.call_id in noted:
            continue
        rid = replayed.ids.get(c.call_id) or (c.call_id if c.call_id in calls else None)
        if rid is None and live:
            rid = _same_call(c, calls, results, taken=set(replayed.ids.values()))
            if rid is not None:
                replayed.ids[c.call_id] = rid
        if rid is None:
            kind, why = (
                ("call_not_made", "the model did not make this call this time")
                if live
                else ("not_replayed", "the replay never reached this call")
            )
            found.append(_at(c, c.index, kind, f"{c.tool_name}: {why}"))
            continue
        d = _classify(c, rid, calls, results, parked, tools, subagents)
        if d is not None:
            found.append(d)
    if live:
        found.extend(_unrecorded(recording, replayed, calls, results))
    found.extend(_turn_outcomes(recording, replayed.events))
    return sorted(found, key=lambda d: (d.index, d.kind))


def _classify(
    c: RecordedCall,
    rid: str,
    calls: Mapping[str, tuple[int, str, dict[str, Any]]],
    results: Mapping[str, dict[str, Any]],
    parked: Mapping[str, int],
    tools: list[str],
    subagents: set[str],
) -> Divergence | None:
    result = results.get(rid) or {}
    error = str(result.get("error") or "") if result.get("isError") else ""
    at = calls[rid][0]
    gone_subagent = c.subagent is not None and c.subagent[1] not in subagents
    if c.tool_name == TASK and gone_subagent and c.subagent is not None:
        index, name = c.subagent
        why = f"subagent {name!r} is gone from the new bundle"
        return _at(c, index, "subagent_missing", why, at)
    if error.startswith("unknown tool"):
        close = difflib.get_close_matches(c.tool_name, tools, n=1, cutoff=0.5)
        hint = f" (renamed to {close[0]!r}?)" if close else ""
        why = f"tool {c.tool_name!r} is not in the new bundle{hint}"
        return _at(c, c.index, "tool_missing", why, at)
    if error.startswith("invalid tool input"):
        why = f"the new input schema of {c.tool_name!r} rejects the recorded arguments: {error}"
        return _at(c, c.index, "schema_rejected", why, at)
    now_parks = rid in parked
    if now_parks and c.approval_index is None:
        why = f"{c.tool_name!r} now needs approval; the recording ran it at once"
        return _at(c, c.index, "approval_added", why, parked[rid])
    if c.approval_index is not None and not now_parks:
        why = f"{c.tool_name!r} no longer needs approval; the recording waited for one"
        return _at(c, c.approval_index, "approval_removed", why, at)
    return None


def _unrecorded(
    recording: Recording,
    replayed: Replayed,
    calls: Mapping[str, tuple[int, str, dict[str, Any]]],
    results: Mapping[str, dict[str, Any]],
) -> list[Divergence]:
    starts = [t.index for t in recording.turns]
    replay_turns = [e.index for e in replayed.events if e.type == EventType.TURN_STARTED]
    out = []
    for rid, (index, tool, args) in calls.items():
        result = results.get(rid) or {}
        if not str(result.get("error") or "").startswith(NOT_RECORDED):
            continue
        ordinal = sum(1 for s in replay_turns if s < index) - 1
        at = starts[ordinal] if 0 <= ordinal < len(starts) else (starts[-1] if starts else 0)
        why = f"{tool}({canonical(args)}) is not in the recording"
        out.append(Divergence(at, "unrecorded_call", why, tool, rid, index))
    return out


def _turn_outcomes(recording: Recording, events: list[Event]) -> list[Divergence]:
    ends = [e for e in events if e.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED)]
    out = []
    for turn, end in zip(recording.turns, ends, strict=False):
        if turn.end_type is None or turn.end_index is None:
            continue
        same = end.type == turn.end_type
        if same and (end.type == EventType.TURN_COMPLETED or end.data.get("error") == turn.error):
            continue
        now = (
            "completed"
            if end.type == EventType.TURN_COMPLETED
            else f"failed: {end.data.get('error')}"
        )
        was = "completed" if turn.end_type == EventType.TURN_COMPLETED else f"failed: {turn.error}"
        why = f"the turn {was} in the recording; in the replay it {now}"
        out.append(Divergence(turn.end_index, "turn_outcome", why, replay_index=end.index))
    ended = [t for t in recording.turns if t.end_index is not None]
    for turn in ended[len(ends) :]:
        assert turn.end_index is not None
        why = "the replay never ran this turn to its end"
        out.append(Divergence(turn.end_index, "turn_outcome", why))
    return out


def _replayed_calls(
    events: list[Event],
) -> tuple[dict[str, tuple[int, str, dict[str, Any]]], dict[str, dict[str, Any]], dict[str, int]]:
    calls: dict[str, tuple[int, str, dict[str, Any]]] = {}
    results: dict[str, dict[str, Any]] = {}
    parked: dict[str, int] = {}
    for e in events:
        if e.type == EventType.ACTIONS_REQUESTED:
            for a in e.data.get("actions", []):
                calls[a["callId"]] = (e.index, a["toolName"], dict(a.get("arguments") or {}))
        elif e.type == EventType.ACTION_RESULT:
            results[e.data["callId"]] = e.data
        elif e.type == EventType.ACTION_APPROVAL_REQUESTED:
            parked[e.data["callId"]] = e.index
    return calls, results, parked


def _same_call(
    c: RecordedCall,
    calls: Mapping[str, tuple[int, str, dict[str, Any]]],
    results: Mapping[str, dict[str, Any]],
    *,
    taken: set[str],
) -> str | None:
    key = canonical(c.arguments)
    for rid, (_, tool, args) in sorted(calls.items(), key=lambda kv: kv[1][0]):
        if rid not in taken and tool == c.tool_name and canonical(args) == key:
            taken.add(rid)
            return rid
    return None


def _at(
    c: RecordedCall, index: int, kind: str, reason: str, replay_index: int | None = None
) -> Divergence:
    return Divergence(index, kind, reason, c.tool_name, c.call_id, replay_index)
