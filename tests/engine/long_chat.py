"""A long conversation on a small context window: the agent, the store, the chat itself.

The agent's `lookup` tool returns about 3 KB, and its window is 4,000 tokens, so a chat of a
few turns already outgrows the window: every behaviour of compaction shows within a short
test. The offline `test` model enforces the declared window as a real provider does.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import ModelError
from agentkit.events import Event
from agentkit.models.base import (
    AssistantMessage,
    Message,
    ModelChunk,
    ModelRequest,
    ToolResultMessage,
)
from agentkit.models.test import TestModel
from agentkit.models.windows import request_tokens
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.base import Store

ALICE = Principal("alice")
RESULT_BYTES = 3000


def project_files(**agent_options: Any) -> dict[str, str]:
    options = ", ".join(f"{k}={v!r}" for k, v in {"context_window": 4000, **agent_options}.items())
    return {
        "agent/instructions.md": "# Long chat agent\n\nYou look things up for the user.\n",
        "agent/agent.py": f"""
            from agentkit import define_agent
            agent = define_agent(max_steps=4, {options})
        """,
        "agent/tools/lookup.py": f"""
            from pydantic import BaseModel, Field
            from agentkit import define_tool

            class LookupInput(BaseModel):
                query: str = Field(description="What to look up")

            @define_tool(description="Look something up; returns a long report.")
            def lookup(input: LookupInput, ctx) -> str:
                line = f"report on {{input.query}}: " + "lorem ipsum dolor sit amet " * 4
                return (line * 100)[:{RESULT_BYTES}]
        """,
        "agent/skills/house-style.md": """
            ---
            description: How answers are written.
            ---
            # House style

            Answer in one short paragraph.
        """,
    }


def write_agent(root: Path, **agent_options: Any) -> AgentBundle:
    for rel, text in project_files(**agent_options).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    bundle = AgentBundle.discover(root)
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    return bundle


def runtime(
    bundle: AgentBundle,
    store: Store,
    state: Path,
    model: Any = None,
    resolver: Callable[[str | None], Any] | None = None,
    **options: Any,
) -> AgentRuntime:
    """A runtime over `store` whose every model id is `model` (a `WatchedModel` by default)."""
    chosen = model if model is not None else WatchedModel()
    return AgentRuntime(
        bundle,
        store,
        model_resolver=resolver or (lambda _id: chosen),
        state_root=state,
        **options,
    )


async def settle(rt: AgentRuntime) -> None:
    from agentkit.engine.dispatch import LocalDispatcher

    d = rt.dispatcher
    assert isinstance(d, LocalDispatcher)
    await d.drain()


@dataclass
class Chat:
    """A chat session and its current continuation token."""

    session_id: str
    token: str


async def chat(rt: AgentRuntime, turns: int, on: Chat | None = None) -> Chat:
    """`turns` messages that each make the agent look something up (on `on`, or a new
    session), each run to its end."""
    if on is None:
        acc = await rt.start_session("please lookup topic 0", principal=ALICE)
        on = Chat(acc.session_id, acc.continuation_token)
        await settle(rt)
        turns -= 1
    for n in range(turns):
        nxt = await rt.follow_up(
            on.session_id, on.token, f"please lookup topic {n + 1}", principal=ALICE
        )
        on.token = nxt.continuation_token
        await settle(rt)
    return on


def of_type(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


async def close(rt: AgentRuntime) -> None:
    from agentkit.engine.dispatch import LocalDispatcher

    d = rt.dispatcher
    if isinstance(d, LocalDispatcher):
        await d.close()


class WatchedModel(TestModel):
    """The test model, remembering every request it was sent (the summary calls too)."""

    __test__ = False

    def __init__(self, fail_summaries: bool = False) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []
        self.fail_summaries = fail_summaries

    def respond(self, request: ModelRequest) -> list[ModelChunk]:
        self.requests.append(request)
        if self.fail_summaries and not request.tools:
            raise ModelError("the summarizer is down", retryable=False, status=500)
        return super().respond(request)

    def largest_request(self) -> int:
        return max(request_tokens(r) for r in self.requests)


def unpaired_calls(messages: list[Message]) -> list[str]:
    """Tool calls without a result right after their step, and results without a call."""
    problems: list[str] = []
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, AssistantMessage):
            problems.extend(f"call {c} never answered" for c in open_calls)
            open_calls = {c.id for c in m.tool_calls}
        elif isinstance(m, ToolResultMessage):
            if m.call_id not in open_calls:
                problems.append(f"result {m.call_id} without its call")
            open_calls.discard(m.call_id)
        else:
            problems.extend(f"call {c} never answered" for c in open_calls)
            open_calls = set()
    return problems
