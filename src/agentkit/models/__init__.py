"""Model providers behind one streaming port, resolved from `provider:model` ids.

`resolve_model("anthropic:claude-sonnet-4-5")` returns a `Model`. Ids split on the first
colon; no id means the `AGENTKIT_MODEL` environment variable, then `"test"`. Provider
modules (and their SDKs) are imported only when that provider is resolved, so importing
this package stays cheap and needs no optional extra.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from agentkit.errors import ModelError
from agentkit.models.base import Model

if TYPE_CHECKING:
    from agentkit.models.scripted import ScriptedModel, Step
    from agentkit.models.test import TestModel

__all__ = [
    "PROVIDERS",
    "ScriptedModel",
    "Step",
    "TestModel",
    "agent_model_id",
    "parse_model_id",
    "resolve_model",
]

DEFAULT_MODEL = "test"

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
    if provider not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
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


def resolve_model(model_id: str | None = None) -> Model:
    """The `Model` for a `provider:model` id (see the module docstring)."""
    provider, name = parse_model_id(model_id)
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
