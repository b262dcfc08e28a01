"""The manifest: one typed, JSON-serializable model of an agent's discovered surface.

`agentkit info --json`, `GET /v1/info` and `agentkit build`'s `manifest.json` all have this
shape (camelCase on the wire). Code is referenced by `CodeRef` (module + attribute) so a
loaded manifest imports a handler only when it is first used.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

MANIFEST_VERSION = 1
Severity = Literal["error", "warning", "info"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class CodeRef(_Model):
    """Where a definition lives: `module` importable with the project root on sys.path."""

    module: str
    attribute: str
    path: str  # the source file, relative to the project root

    def load(self) -> Any:
        """Import the module and return the definition (the caller sets up sys.path)."""
        return getattr(importlib.import_module(self.module), self.attribute)


class Diagnostic(_Model):
    """A finding about the agent folder a person can act on."""

    severity: Severity
    code: str
    path: str
    message: str


class AgentSpec(_Model):
    name: str
    slug: str
    model: str | None = None
    max_steps: int = 20
    tool_timeout: float = 120.0
    stop_grace: float = 2.0
    options: dict[str, Any] = Field(default_factory=dict)
    ref: CodeRef | None = None


class ToolSpec(_Model):
    name: str
    description: str
    input_schema: dict[str, Any]
    needs_approval: bool | Literal["predicate"] = False
    execution: Literal["server", "agent"] = "server"
    timeout: float | None = None
    env: list[str] = Field(default_factory=list)  # variables an agent tool's process may see
    idempotent: bool = False  # a call in doubt after a crash is run again with the same key
    reconcile: bool = False  # it has a `reconcile` function for calls in doubt
    ref: CodeRef | None = None  # None for built-in tools


class SkillSpec(_Model):
    name: str
    description: str
    markdown: str
    files: dict[str, str] = Field(default_factory=dict)
    source: str  # path of the .md, SKILL.md or .py it came from


class SubagentSpec(_Model):
    name: str
    description: str
    model: str | None = None
    instructions: str
    source: str
    ref: CodeRef | None = None  # the subagent's agent.py, when it has one


class McpConnectionSpec(_Model):
    name: str
    transport: str
    url: str | None = None
    command: list[str] | None = None
    ref: CodeRef
    description: str | None = None
    header_names: list[str] = Field(default_factory=list)  # values stay out of the manifest
    tools: list[str] | None = None  # None: every tool the server lists


class RouteSpec(_Model):
    method: str
    path: str  # as served, e.g. /v1/channels/drive
    body_schema: dict[str, Any] | None = None
    description: str | None = None


class ChannelSpec(_Model):
    name: str
    kind: str = "custom"  # custom | slack | github
    routes: list[RouteSpec] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)
    ref: CodeRef
    description: str | None = None


class ScheduleSpec(_Model):
    id: str
    cron: str
    kind: Literal["markdown", "handler"]
    prompt: str | None = None
    ref: CodeRef | None = None
    source: str
    # What to do with the slots missed while the host was down (docs/schedules.md).
    catch_up: Literal["skip", "once", "all"] = "once"


class HookSpec(_Model):
    name: str
    events: list[str]
    ref: CodeRef


class AbSpec(_Model):
    name: str
    variants: list[str]
    ref: CodeRef
    weights: dict[str, float] = Field(default_factory=dict)
    description: str | None = None


class EvalSpec(_Model):
    id: str  # path under evals/ without the .eval.py suffix
    tags: list[str] = Field(default_factory=list)
    ref: CodeRef
    description: str | None = None


class Manifest(_Model):
    """Everything agentkit discovered in one agent folder."""

    version: int = MANIFEST_VERSION
    agent: AgentSpec
    instructions: str
    tools: list[ToolSpec] = Field(default_factory=list)
    skills: list[SkillSpec] = Field(default_factory=list)
    subagents: list[SubagentSpec] = Field(default_factory=list)
    mcp_connections: list[McpConnectionSpec] = Field(default_factory=list)
    # `agent/mcp.lock` as written by `agentkit mcp lock` (None: MCP tools are not pinned).
    mcp_lock: dict[str, Any] | None = None
    channels: list[ChannelSpec] = Field(default_factory=list)
    schedules: list[ScheduleSpec] = Field(default_factory=list)
    hooks: list[HookSpec] = Field(default_factory=list)
    abs: list[AbSpec] = Field(default_factory=list)
    ab_config: dict[str, Any] | None = None  # agent/ab.config.py, camelCase keys
    evals: list[EvalSpec] = Field(default_factory=list)
    evals_config: dict[str, Any] | None = None
    workspace_files: list[str] = Field(default_factory=list)  # under agent/sandbox/workspace
    diagnostics: list[Diagnostic] = Field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_json(self) -> str:
        """Stable JSON (sorted keys) so two builds of one input are byte-identical."""
        import json

        return (
            json.dumps(
                self.model_dump(by_alias=True, mode="json"),
                sort_keys=True,
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        )
