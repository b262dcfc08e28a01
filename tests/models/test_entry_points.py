"""Providers that installed packages register under the `agentkit.models` entry points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentkit.errors import ModelError
from agentkit.models import parse_model_id, resolve_model
from agentkit.models.base import ModelRequest, TextDelta, UserMessage
from agentkit.project.validation import model_problem

PLUGIN = """
from agentkit.models.scripted import ScriptedModel, Step


class Named(ScriptedModel):
    def __init__(self, name):
        super().__init__([Step.text("from " + name)])
        self._name = name

    @property
    def id(self):
        return "mycorp:" + self._name


def create(name):
    return Named(name)


def broken(name):
    return object()
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package `mycorp_models` installed with its entry points, as pip leaves it."""
    (tmp_path / "mycorp_models.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "mycorp_models-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mycorp-models\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[agentkit.models]\nmycorp = mycorp_models:create\nbroken = mycorp_models:broken\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


async def test_a_registered_provider_resolves_its_ids(installed: None) -> None:
    model = resolve_model("mycorp:model-x")
    assert model.id == "mycorp:model-x"
    request = ModelRequest(system="", messages=[UserMessage("hi")], tools=[])
    chunks = [c async for c in model.stream(request)]
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "from model-x"


def test_a_registered_provider_passes_the_agent_folders_check(installed: None) -> None:
    assert model_problem("mycorp:model-x") is None
    assert parse_model_id("MyCorp:model-x") == ("mycorp", "model-x")


def test_an_unregistered_provider_is_still_refused(installed: None) -> None:
    with pytest.raises(ModelError, match=r"unknown model provider 'othercorp'.*mycorp"):
        parse_model_id("othercorp:model-x")


def test_a_factory_returning_no_model_is_a_clear_error(installed: None) -> None:
    with pytest.raises(ModelError, match=r"broken model provider.*is not a Model"):
        resolve_model("broken:anything")
