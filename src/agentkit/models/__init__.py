"""Model providers behind one streaming port, resolved from `provider:model` ids.

`resolve_model("anthropic:claude-sonnet-4-5")` returns a `Model`. Ids split on the first
colon; no id means the `AGENTKIT_MODEL` environment variable, then `"test"`. Provider
modules (and their SDKs) are imported only when that provider is resolved, so importing
this package stays cheap and needs no optional extra.

A package can bring a provider we don't ship by registering a factory under the
`agentkit.models` entry-point group: with `mycorp = "mycorp.models:create"` in its
`[project.entry-points."agentkit.models"]`, the id `mycorp:model-x` resolves to
`create("model-x")`, which returns an object implementing `Model`.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from agentkit.errors import ModelError
from agentkit.models.base import Model

if TYPE_CHECKING:
    from agentkit.models.scripted import ScriptedModel, Step
    from agentkit.models.test import TestModel

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROVIDERS",
    "ScriptedModel",
    "Step",
    "TestModel",
    "agent_model_id",
    "parse_model_id",
    "resolve_model",
]

DEFAULT_MODEL = "test"
ENTRY_POINT_GROUP = "agentkit.models"  # where installed packages register providers

# provider -> (module, the extra that installs its SDK)
PROVIDERS: dict[str, tuple[str, str | None]] = {
    "test": ("agentkit.models.test", None),
    "anthropic": ("agentkit.models.anthropic", "anthropic"),
    "openai": ("agentkit.models.openai", "openai"),
    "bedrock": ("agentkit.models.bedrock", "aws"),
}
_SDK_PACKAGES = {"anthropic": "anthropic", "openai": "openai", "bedrock": "boto3"}

_LAZY = {
    "TestModel": "agentkit.models.test",
    "ScriptedModel": "agentkit.models.scripted",
    "Step": "agentkit.models.scripted",
}


def agent_model_id(file_model: str | None) -> str | None:
    """The id the root agent runs on: `AGENTKIT_MODEL` when set, else the agent file's.

    The environment wins because it is what a deployment controls (SAM's `ModelId`
    parameter sets it on every function) and what a person sets for one run; the agent
    file states the default. Subagents that name a model of their own keep it.
    """
    return os.environ.get("AGENTKIT_MODEL", "").strip() or file_model or None


def parse_model_id(model_id: str | None) -> tuple[str, str]:
    """Split a model id into `(provider, model)` without importing anything.

    None or empty falls back to `AGENTKIT_MODEL`, then `"test"`. Raises `ModelError` for
    an unknown provider or a missing model name.
    """
    raw = (model_id or "").strip() or os.environ.get("AGENTKIT_MODEL", "").strip()
    raw = raw or DEFAULT_MODEL
    provider, _, name = raw.partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if provider not in PROVIDERS and _registered_provider(provider) is None:
        known = ", ".join(sorted({*PROVIDERS, *_registered_providers()}))
        raise ModelError(
            f"unknown model provider {provider!r} in model id {raw!r}: use one of {known} "
            "as in 'anthropic:claude-sonnet-4-5'"
        )
    if provider == "test":
        if name:
            raise ModelError(f"the test model takes no model name: use 'test', not {raw!r}")
        return provider, ""
    if not name:
        raise ModelError(f"model id {raw!r} names no model: write it as '{provider}:<model>'")
    return provider, name


def _registered_providers() -> list[str]:
    """The providers installed packages register under `agentkit.models`."""
    return sorted({ep.name.lower() for ep in entry_points(group=ENTRY_POINT_GROUP)})


def _registered_provider(provider: str) -> EntryPoint | None:
    """The entry point registering `provider`, if an installed package does."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() == provider:
            return ep
    return None


def _from_entry_point(ep: EntryPoint, name: str) -> Model:
    try:
        factory = ep.load()
        model = factory(name)
    except ModelError:
        raise
    except Exception as exc:  # a broken plugin names itself, not a traceback
        raise ModelError(
            f"the {ep.name} model provider ({ep.value}) failed to create {name!r}:"
            f" {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(getattr(model, "id", None), str) or not callable(
        getattr(model, "stream", None)
    ):
        raise ModelError(
            f"the {ep.name} model provider ({ep.value}) returned {type(model).__name__},"
            " which is not a Model: it needs an `id` string and a `stream(request)` method"
        )
    result: Model = model
    return result


def resolve_model(model_id: str | None = None) -> Model:
    """The `Model` for a `provider:model` id (see the module docstring)."""
    provider, name = parse_model_id(model_id)
    if provider not in PROVIDERS:
        ep = _registered_provider(provider)
        assert ep is not None  # parse_model_id refused it otherwise
        return _from_entry_point(ep, name)
    if provider == "test":
        from agentkit.models.test import TestModel

        return TestModel()
    module_name, extra = PROVIDERS[provider]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        sdk = _SDK_PACKAGES[provider]
        if exc.name is None or exc.name.split(".")[0] != sdk:
            raise
        raise ModelError(
            f"the {provider} provider needs the {sdk} package: "
            f"pip install 'agentkit-serverless[{extra}]'"
        ) from exc
    model: Model = module.create(name)
    return model


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
