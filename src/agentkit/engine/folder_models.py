"""Models an agent folder hands over as objects (`define_agent(model=ScriptedModel(...))`).

The manifest records such a model by its `id`; the object itself lives in the agent's
`agent.py` (or a subagent's), so it is found by importing that file, on the first turn
that needs a model. A turn asking for that id gets the object; any other id goes to the
host's resolver, so `AGENTKIT_MODEL` still overrides the folder as it does for ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agentkit.authoring.agent import AgentDefinition
from agentkit.models.base import Model
from agentkit.models.conformance import as_model
from agentkit.project.manifest import CodeRef, Manifest


class DefinitionSource(Protocol):
    """What is needed of an `AgentBundle` to find the folder's model objects."""

    @property
    def manifest(self) -> Manifest: ...

    def definition(self, ref: CodeRef) -> object: ...


def folder_models(bundle: DefinitionSource) -> dict[str, Model]:
    """The model objects the root agent and its subagents define, by id."""
    refs = [bundle.manifest.agent.ref, *(s.ref for s in bundle.manifest.subagents)]
    found: dict[str, Model] = {}
    for ref in refs:
        if ref is None:
            continue
        definition = bundle.definition(ref)
        if not isinstance(definition, AgentDefinition) or isinstance(definition.model, str):
            continue
        model = as_model(definition.model)
        if model is not None:
            found.setdefault(model.id, model)
    return found


class FolderModelResolver:
    """Resolve ids to the folder's model objects first, then through `fallback`."""

    def __init__(self, bundle: DefinitionSource, fallback: Callable[[str | None], Model]):
        self._bundle = bundle
        self._fallback = fallback
        self._models: dict[str, Model] | None = None

    def __call__(self, model_id: str | None) -> Model:
        if self._models is None:
            self._models = folder_models(self._bundle)
        found = self._models.get(model_id or "")
        return found if found is not None else self._fallback(model_id)


__all__ = ["DefinitionSource", "FolderModelResolver", "folder_models"]
