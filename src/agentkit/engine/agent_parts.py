"""What a turn takes from the agent bundle: tool table, model, system prompt, experiments.

Each is built on first use (a process that only accepts requests never imports the
agent's tools or resolves its model) and at most once per bundle. A reload builds a new
`AgentParts` and the runtime swaps it in whole; a turn already running keeps the parts it
took when it started, so it finishes on the code it began with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentkit.authoring.ab import AbDefinition
from agentkit.authoring.tools import ToolDefinition
from agentkit.engine.arms import AbSource, experiments
from agentkit.engine.folder_models import FolderModelResolver
from agentkit.models import agent_model_id
from agentkit.models.base import Model
from agentkit.project.manifest import CodeRef, Manifest

if TYPE_CHECKING:
    from agentkit.engine.tools.calls import ToolEntry, ToolProvider


class Bundle(AbSource, Protocol):
    """What the engine needs of an `AgentBundle` (with `ab`, its experiments)."""

    @property
    def manifest(self) -> Manifest: ...

    @property
    def root(self) -> Path: ...

    @property
    def sandbox_dir(self) -> Path | None: ...

    def tool(self, name: str) -> ToolDefinition | None: ...

    def definition(self, ref: CodeRef) -> Any: ...


class AgentParts:
    """One bundle's tool table, model, system prompt and experiments, each built once."""

    def __init__(self, bundle: Bundle, model_resolver: Callable[[str | None], Model]) -> None:
        self.bundle = bundle
        self.manifest = bundle.manifest
        # Ids the folder defines as model objects resolve to those; the rest go to the host.
        self.resolve: Callable[[str | None], Model] = FolderModelResolver(bundle, model_resolver)
        self._tools: dict[str, ToolEntry] | None = None
        self._model: Model | None = None
        self._system: str | None = None
        self._experiments: dict[str, AbDefinition] | None = None

    @property
    def tools(self) -> dict[str, ToolEntry]:
        """The tool table (user tools imported on first use), built-ins included."""
        if self._tools is None:
            from agentkit.engine.tools.builtins import tool_table

            self._tools = tool_table(self.bundle)
        return self._tools

    async def turn_tools(self, providers: list[ToolProvider]) -> dict[str, ToolEntry]:
        """The tool table of one turn: `tools` plus the providers' (project names win)."""
        if not providers:
            return self.tools
        table = dict(self.tools)
        for provider in providers:
            for entry in await provider.tool_entries():
                table.setdefault(entry.name, entry)
        return table

    def model(self) -> Model:
        """The agent's model, resolved on first use (`ModelError` when it cannot be)."""
        if self._model is None:
            self._model = self.resolve(agent_model_id(self.manifest.agent.model))
        return self._model

    def system_prompt(self) -> str:
        """The system prompt built from the manifest, on first use."""
        if self._system is None:
            from agentkit.engine.tools.builtins import system_prompt

            self._system = system_prompt(self.manifest)
        return self._system

    @property
    def experiments(self) -> dict[str, AbDefinition]:
        """The agent's A/B experiments by name."""
        if self._experiments is None:
            self._experiments = experiments(self.manifest, self.bundle)
        return self._experiments


__all__ = ["AgentParts", "Bundle"]
