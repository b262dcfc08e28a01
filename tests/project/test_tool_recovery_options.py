"""`define_tool(idempotent=..., reconcile=...)`: checked when the tool is defined, so a
mistake is a diagnostic naming the file when the project compiles, and recorded in the
manifest."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkit import InDoubt, define_tool
from agentkit.project.bundle import AgentBundle
from tests.fixtures.project_tree import write_tree


class ChargeInput(BaseModel):
    amount: int


def charge(input: ChargeInput) -> int:
    return input.amount


def test_a_tool_is_neither_idempotent_nor_reconciled_by_default() -> None:
    tool = define_tool(charge, description="Charge.")
    assert tool.idempotent is False
    assert tool.reconcile is None


def test_both_are_kept_on_the_definition() -> None:
    def look_up(input: ChargeInput, ctx: object) -> InDoubt:
        return InDoubt.NOT_DONE

    tool = define_tool(charge, description="Charge.", idempotent=True, reconcile=look_up)
    assert tool.idempotent is True
    assert tool.reconcile is look_up


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"idempotent": "yes"}, "idempotent must be True or False"),
        ({"reconcile": "look_up"}, "reconcile must be a function"),
        ({"reconcile": lambda: None}, "reconcile takes (input) or (input, ctx)"),
        ({"reconcile": lambda a, b, c: None}, "reconcile takes (input) or (input, ctx)"),
        ({"idempotent": True, "execution": "agent"}, "for server tools"),
        ({"reconcile": lambda i: None, "execution": "agent"}, "for server tools"),
    ],
)
def test_a_wrong_option_is_refused_when_the_tool_is_defined(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        define_tool(charge, description="Charge.", **options)  # type: ignore[call-overload]


TOOL = """
from pydantic import BaseModel
from agentkit import InDoubt, define_tool

class ChargeInput(BaseModel):
    amount: int

def look_up(input, ctx):
    return InDoubt.UNKNOWN

@define_tool(description="Charge.", {options})
def charge(input: ChargeInput, ctx) -> int:
    return input.amount
"""


def _compile(tmp_path: Path, options: str) -> AgentBundle:
    files = {
        "agent/instructions.md": "Be brief.\n",
        "agent/tools/charge.py": TOOL.format(options=options),
    }
    return AgentBundle.discover(write_tree(tmp_path / "proj", files))


def test_the_manifest_records_both(tmp_path: Path) -> None:
    manifest = _compile(tmp_path, "idempotent=True, reconcile=look_up").manifest
    [tool] = [t for t in manifest.tools if t.name == "charge"]
    assert (tool.idempotent, tool.reconcile) == (True, True)


def test_a_bad_reconcile_fails_the_compile_naming_the_file(tmp_path: Path) -> None:
    diagnostics = _compile(tmp_path, "reconcile=42").manifest.diagnostics
    [failed] = [d for d in diagnostics if d.code == "import.failed"]
    assert failed.path == "agent/tools/charge.py"
    assert "reconcile must be a function" in failed.message
