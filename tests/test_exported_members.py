"""The public authoring API: every name in `agentkit.__all__` exists and is documented."""

from __future__ import annotations

import inspect

import agentkit

ARCHITECTURE_NAMES = {
    "define_agent",
    "define_instructions",
    "define_tool",
    "define_skill",
    "define_hook",
    "define_schedule",
    "define_channel",
    "define_ab",
    "define_mcp_connection",
    "define_eval",
    "define_evals_config",
    "ToolContext",
    "HookContext",
    "ScheduleContext",
    "ChannelContext",
}


def test_the_fixed_names_are_exported() -> None:
    assert set(agentkit.__all__) >= ARCHITECTURE_NAMES


def test_every_exported_name_resolves() -> None:
    for name in agentkit.__all__:
        assert getattr(agentkit, name) is not None, name


def test_all_is_sorted_and_unique() -> None:
    assert list(agentkit.__all__) == sorted(set(agentkit.__all__))


def test_every_public_callable_has_a_docstring() -> None:
    for name in agentkit.__all__:
        value = getattr(agentkit, name)
        if callable(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_definitions_are_immutable() -> None:
    tool = agentkit.define_tool(lambda i, c: 1, description="d", input_schema={"type": "object"})
    try:
        tool.description = "changed"  # type: ignore[misc]
    except AttributeError:
        return
    raise AssertionError("ToolDefinition is mutable")
