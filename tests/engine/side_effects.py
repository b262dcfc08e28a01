"""What the test agent's tools did, read from the tools themselves (not from the events)."""

from __future__ import annotations

from agentkit.engine.runtime import AgentRuntime


def deploy_calls(rt: AgentRuntime) -> list[str]:
    """The environments the `deploy` tool of `rt`'s agent has deployed to, in order.

    The tool appends to a module-level `CALLS` list (tests/engine/conftest.py); the list is
    the module's, so runtimes over the same loaded agent share it.
    """
    definition = rt.tools["deploy"].definition
    assert definition is not None
    calls: list[str] = definition.handler.__globals__["CALLS"]
    return calls
