"""Model ids resolve to providers; providers load lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agentkit.models
from agentkit.errors import ModelError
from agentkit.models import parse_model_id, resolve_model
from agentkit.models.anthropic import AnthropicModel
from agentkit.models.bedrock import BedrockModel
from agentkit.models.openai import OpenAIModel
from agentkit.models.test import TestModel


def test_ids_split_on_the_first_colon():
    assert parse_model_id("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0") == (
        "bedrock",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    )


def test_no_id_falls_back_to_the_environment_then_test(monkeypatch):
    monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    assert isinstance(resolve_model(None), TestModel)
    assert isinstance(resolve_model(""), TestModel)
    monkeypatch.setenv("AGENTKIT_MODEL", "openai:gpt-4o")
    assert parse_model_id(None) == ("openai", "gpt-4o")


@pytest.mark.parametrize(
    ("model_id", "cls"),
    [
        ("anthropic:claude-sonnet-4-5", AnthropicModel),
        ("openai:gpt-4o", OpenAIModel),
        ("bedrock:amazon.nova-pro-v1:0", BedrockModel),
    ],
)
def test_each_provider_resolves_to_its_adapter_with_the_full_id(model_id, cls):
    model = resolve_model(model_id)
    assert isinstance(model, cls) and model.id == model_id


def test_an_unknown_provider_names_the_known_ones():
    with pytest.raises(
        ModelError, match=r"unknown model provider 'gemini'.*anthropic, bedrock, openai, test"
    ):
        resolve_model("gemini:pro")


def test_a_provider_without_a_model_name_is_rejected():
    with pytest.raises(ModelError, match="names no model"):
        resolve_model("anthropic:")


def test_the_test_model_takes_no_name():
    with pytest.raises(ModelError, match="takes no model name"):
        resolve_model("test:fast")


def test_unknown_attributes_raise_attribute_error():
    with pytest.raises(AttributeError):
        agentkit.models.NoSuchThing  # noqa: B018


def _fresh(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.strip()


def test_importing_the_package_loads_no_provider_sdk():
    loaded = _fresh(
        "import sys, agentkit.models; from agentkit.models import resolve_model, TestModel, Step;"
        "resolve_model('test');"
        "print(sorted(m for m in ('anthropic', 'openai', 'boto3', 'botocore') if m in sys.modules))"
    )
    assert loaded == "[]"


def test_resolving_one_provider_loads_only_its_sdk():
    loaded = _fresh(
        "import sys; from agentkit.models import resolve_model; resolve_model('openai:gpt-4o');"
        "print(sorted(m for m in ('anthropic', 'openai', 'boto3') if m in sys.modules))"
    )
    assert loaded == "['openai']"


def test_a_missing_sdk_gives_an_install_hint():
    # A None entry in sys.modules makes `import anthropic` fail as if it were not installed.
    out = _fresh(
        "import sys; sys.modules['anthropic'] = None\n"
        "from agentkit.models import resolve_model\n"
        "try:\n    resolve_model('anthropic:claude-sonnet-4-5')\n"
        "except Exception as e:\n    print(type(e).__name__, e)"
    )
    hint = "pip install 'agentkit-serverless[anthropic]'"
    assert out == f"ModelError the anthropic provider needs the anthropic package: {hint}"


def test_the_public_names_are_exactly_these():
    assert sorted(agentkit.models.__all__) == [
        "ENTRY_POINT_GROUP",
        "PROVIDERS",
        "ScriptedModel",
        "Step",
        "TestModel",
        "agent_model_id",
        "parse_model_id",
        "resolve_model",
    ]
    for name in agentkit.models.__all__:
        assert getattr(agentkit.models, name) is not None
