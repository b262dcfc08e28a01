"""A tool whose input parameter is not typed is an error naming the file, not a tool with
an empty schema the model could never send anything through."""

from __future__ import annotations

import pytest

from agentkit.project.bundle import AgentBundle
from tests.fixtures.project_tree import ProjectTree

TOOL = """
from pydantic import BaseModel
from agentkit import define_tool

class Lookup(BaseModel):
    city: str

@define_tool(description="Look something up.")
{signature}
    return "ok"
"""


@pytest.mark.parametrize(
    ("signature", "said"),
    [
        ("def lookup(input, ctx):", "'input' has no type annotation"),
        ("def lookup(query: dict, ctx):", "'query' is annotated <class 'dict'>"),
        ("def lookup(input: 'Missing', ctx):", "cannot be resolved"),
    ],
)
def test_untyped_input_is_an_error_naming_the_file(
    project_tree: ProjectTree, signature: str, said: str
) -> None:
    root = project_tree({"agent/tools/lookup.py": TOOL.format(signature=signature)})
    manifest = AgentBundle.discover(root).manifest
    (diag,) = [d for d in manifest.diagnostics if d.code == "tool.untyped_input"]
    assert diag.severity == "error"
    assert diag.path == "agent/tools/lookup.py"
    assert said in diag.message and "pydantic model" in diag.message
    assert manifest.tool("lookup") is None


@pytest.mark.parametrize(
    "signature",
    [
        "def lookup(input: Lookup, ctx):",
        "def lookup():",  # takes no input at all
    ],
)
def test_typed_or_inputless_tools_are_fine(project_tree: ProjectTree, signature: str) -> None:
    root = project_tree({"agent/tools/lookup.py": TOOL.format(signature=signature)})
    manifest = AgentBundle.discover(root).manifest
    assert not manifest.has_errors, manifest.diagnostics
    tool = manifest.tool("lookup")
    assert tool is not None
    if "Lookup" in signature:
        assert tool.input_schema["properties"]["city"]["type"] == "string"
