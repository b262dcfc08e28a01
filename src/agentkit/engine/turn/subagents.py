"""Subagents: a child loop with its own instructions (and optional model), no nesting.

The child sees only the prompt the parent wrote, runs the parent's tools (minus `task`),
and returns its final text. Its steps are not recorded one by one: the parent's stream
carries `subagent.called` and `subagent.completed` (with the child's usage), and the
child's answer becomes the `task` call's result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentkit.engine.folds.conversation import result_text
from agentkit.engine.tools.calls import InvalidToolInput, Outcome, ToolEntry
from agentkit.engine.turn.step import StepSink, model_step
from agentkit.errors import ModelError, TurnInterrupted
from agentkit.events import ActionCall, Usage
from agentkit.models.base import (
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentkit.project.manifest import SubagentSpec

Executor = Callable[[ToolEntry, ActionCall, Any], Awaitable[Outcome]]


@dataclass(slots=True)
class SubagentResult:
    text: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)


async def run_subagent(
    spec: SubagentSpec,
    prompt: str,
    model: Model,
    tools: dict[str, ToolEntry],
    execute: Executor,
    interrupted: Callable[[], Awaitable[bool]],
    max_steps: int,
) -> SubagentResult:
    """Run the child loop to a final answer; failures come back as `error`, not raised.

    An interrupt still propagates, so a stop request ends the parent turn too.
    """
    messages: list[Message] = [UserMessage(prompt)]
    schemas = [e.schema() for e in tools.values()]
    result = SubagentResult()
    try:
        for _ in range(max_steps):
            request = ModelRequest(spec.instructions, list(messages), schemas)
            out = await model_step(model, request, StepSink(), interrupted)
            result.usage = result.usage + out.usage
            messages.append(
                AssistantMessage(out.text, out.reasoning, out.signature, tuple(out.calls))
            )
            if not out.calls:
                result.text = out.text
                return result
            outcomes = await asyncio.gather(*(_call(c, tools, execute) for c in out.calls))
            messages.extend(outcomes)
        result.error = f"subagent {spec.name!r} reached max_steps ({max_steps}) without an answer"
    except TurnInterrupted:
        raise
    except ModelError as exc:
        result.error = f"subagent {spec.name!r} failed: {exc}"
    return result


async def _call(
    call: ToolCall, tools: dict[str, ToolEntry], execute: Executor
) -> ToolResultMessage:
    entry = tools.get(call.name)
    if entry is None:
        return ToolResultMessage(call.id, call.name, f"unknown tool {call.name!r}", True)
    try:
        args, value = entry.validate(call.arguments)
    except InvalidToolInput as exc:
        return ToolResultMessage(call.id, call.name, str(exc), True)
    if entry.needs_approval(value):
        return ToolResultMessage(
            call.id, call.name, "this tool needs approval and cannot run inside a subagent", True
        )
    outcome = await execute(
        entry, ActionCall(call_id=call.id, tool_name=call.name, arguments=args), value
    )
    if outcome.is_error:
        return ToolResultMessage(call.id, call.name, outcome.error or "tool failed", True)
    return ToolResultMessage(call.id, call.name, result_text(outcome.result))
