"""The cassette: recorded model steps and recorded tool results, served to the real engine.

`CassetteModel` implements the models protocol: each `stream` call plays the next recorded
step of the turn being replayed (its reasoning, text and tool calls, with the recorded
call ids and usage). A subagent's steps are not recorded one by one, only its answer, so a
request shaped like a subagent's (a lone prompt, no `task` tool) gets that answer.

`RecordedTools` is the tool layer: every entry of the new bundle's tool table keeps its
name, schema and approval rule (the engine validates and parks exactly as it would) but its
handler answers from the recording and never runs the tool. A call is matched by its call
id, else by the same tool and the same arguments; an unmatched call is a tool error saying
it was not in the recording.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from agentkit.authoring.contexts import ToolContext
from agentkit.engine.agent_parts import AgentParts, Bundle
from agentkit.engine.tools.builtins import TASK, tool_table
from agentkit.engine.tools.calls import Outcome, ToolEntry, ToolProvider
from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models.base import (
    Finish,
    Model,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UserMessage,
)
from agentkit.replay.recording import RecordedCall, RecordedStep, RecordedTurn, Recording

__all__ = ["NOT_RECORDED", "CassetteModel", "RecordedTools", "ReplayParts", "canonical"]

NOT_RECORDED = "the call was not in the recording"
_STOPS: tuple[StopReason, ...] = ("end_turn", "tool_use", "max_tokens", "error", "other")


def canonical(arguments: Any) -> str:
    """Arguments as comparable text (key order does not matter)."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


class CassetteModel:
    """Plays the recorded steps of the current turn, one per `stream` call."""

    def __init__(self, recording: Recording, *, model_id: str | None = None) -> None:
        recorded = next((t.model for t in recording.turns if t.model), None)
        self._id = model_id or recorded or "cassette"
        self._steps: deque[RecordedStep] = deque()
        self._turn: RecordedTurn | None = None
        self._subagents: list[tuple[str, str]] = list(recording.subagent_results)
        self.blocked = asyncio.Event()  # set while an interrupted step waits to be cut

    @property
    def id(self) -> str:
        return self._id

    def begin_turn(self, turn: RecordedTurn | None) -> None:
        """The next requests belong to `turn` (None: a message that started no turn)."""
        self._turn = turn
        self._steps = deque(turn.steps if turn is not None else ())
        self.blocked.clear()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        answer = self._subagent_answer(request)
        if answer is not None:
            yield TextDelta(answer)
            yield Finish(stop_reason="end_turn", usage=Usage())
            return
        if not self._steps:
            if self._turn is not None and self._turn.interrupted:
                await self._wait_for_the_cut()
            raise ModelError("the recording has no further model step in this turn")
        step = self._steps.popleft()
        if step.error is not None:
            if self._turn is not None and self._turn.interrupted:
                await self._wait_for_the_cut()
            raise ModelError(step.error)
        if step.reasoning is not None:
            yield ReasoningDelta(step.reasoning, signature=step.signature)
        if step.text:
            yield TextDelta(step.text)
        for c in step.calls:
            yield ToolCallChunk(ToolCall(c.call_id, c.tool_name, dict(c.arguments)))
        stop = step.stop_reason if step.stop_reason in _STOPS else "other"
        yield Finish(stop_reason=stop, usage=step.usage)

    async def _wait_for_the_cut(self) -> None:
        # The recorded turn was interrupted here: wait, as the live step did, until the
        # replay sends the interrupting message (the engine cancels this read).
        self.blocked.set()
        await asyncio.Event().wait()

    def _subagent_answer(self, request: ModelRequest) -> str | None:
        if any(t.name == TASK for t in request.tools) or len(request.messages) != 1:
            return None
        first = request.messages[0]
        if not isinstance(first, UserMessage):
            return None
        for i, (prompt, text) in enumerate(self._subagents):
            if prompt == first.text:
                del self._subagents[i]
                return text
        return None


@dataclass(slots=True)
class RecordedTools:
    """Serves recorded results in place of running tools; remembers what it served."""

    recording: Recording
    unconsumed: dict[str, RecordedCall] = field(default_factory=dict)
    served: list[str] = field(default_factory=list)  # recorded call ids, in order
    missed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.unconsumed = {
            cid: c for cid, c in self.recording.calls.items() if c.result is not None
        }

    def table(self, real: dict[str, ToolEntry]) -> dict[str, ToolEntry]:
        """The new bundle's tool table, every handler replaced by the recording."""
        out: dict[str, ToolEntry] = {}
        for name, entry in real.items():
            if name == TASK and entry.spec is None:
                out[name] = entry  # the engine delegates; the cassette answers the subagent
                continue
            spec = entry.spec
            if spec is not None and spec.execution == "agent":
                spec = spec.model_copy(update={"execution": "server"})  # no subprocess
            out[name] = replace(entry, spec=spec, builtin=self._handler(name))
        return out

    def mcp_entries(self, prefixes: list[str]) -> list[ToolEntry]:
        """Entries for the recorded calls of MCP tools whose connection the bundle still
        has. Their schemas live on the server, which a replay never contacts."""
        names = {
            c.tool_name
            for c in self.recording.calls.values()
            if any(c.tool_name.startswith(p) for p in prefixes)
        }
        return [
            ToolEntry(
                name=n,
                description=f"{n} (an MCP tool, answered from the recording)",
                input_schema={"type": "object"},
                builtin=self._handler(n),
            )
            for n in sorted(names)
        ]

    def _handler(self, name: str) -> Callable[[Any, ToolContext], Outcome]:
        def serve(value: Any, ctx: ToolContext) -> Outcome:
            return self.serve(name, ctx.call_id, _arguments(value))

        return serve

    def serve(self, name: str, call_id: str, arguments: dict[str, Any]) -> Outcome:
        found = self.unconsumed.get(call_id)
        if found is None or found.tool_name != name:
            key = canonical(arguments)
            found = next(
                (
                    c
                    for c in sorted(self.unconsumed.values(), key=lambda c: c.index)
                    if c.tool_name == name and canonical(c.arguments) == key
                ),
                None,
            )
        if found is None or found.result is None:
            self.missed.append((name, arguments))
            return Outcome(True, error=f"{NOT_RECORDED}: {name}({canonical(arguments)})")
        del self.unconsumed[found.call_id]
        self.served.append(found.call_id)
        r = found.result
        return Outcome(
            bool(r.get("isError")),
            result=r.get("result"),
            error=r.get("error"),
            duration_ms=int(r.get("durationMs") or 0),
        )


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True)
        return dumped
    return dict(value) if isinstance(value, dict) else {}


class ReplayParts(AgentParts):
    """The bundle's parts with the recorded tool layer in place of the live tools."""

    def __init__(
        self, bundle: Bundle, resolve: Callable[[str | None], Model], tools: RecordedTools
    ) -> None:
        super().__init__(bundle, resolve)
        self.recorded = tools
        self.real = tool_table(bundle)  # what the new bundle offers, for the report
        table = tools.table(self.real)
        prefixes = [f"mcp__{c.name}__" for c in bundle.manifest.mcp_connections]
        for entry in tools.mcp_entries(prefixes):
            table.setdefault(entry.name, entry)
        self._replay_table = table

    @property
    def tools(self) -> dict[str, ToolEntry]:
        return self._replay_table

    async def turn_tools(self, providers: list[ToolProvider]) -> dict[str, ToolEntry]:
        return self._replay_table  # MCP servers are never contacted in a replay
