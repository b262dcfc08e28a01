"""Approving a call whose tool changed: the recorded arguments must still fit its schema.

A call parked for approval keeps the arguments the model gave under the bundle of its day.
When a reload (or a deploy) changes that tool's input schema before the call is decided, an
approval would run arguments the tool no longer takes. So approving checks them against the
tool as it is now, and refuses with `409 schema_changed` when they no longer fit; the call
stays pending (it can still be denied, or the user can ask again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agentkit.engine.folds.conversation import BUDGET_TOOL, LOOP_TOOL
from agentkit.engine.folds.pending_approvals import pending_approvals
from agentkit.engine.tools.calls import InvalidToolInput, ToolEntry
from agentkit.errors import Conflict
from agentkit.events import Event

SCHEMA_CHANGED = "schema_changed"


def check_still_valid(
    events: Iterable[Event], call_id: str, tool: Callable[[str], ToolEntry | None]
) -> None:
    """Raise `Conflict(schema_changed)` when pending call `call_id`'s recorded arguments
    no longer fit the input schema of its tool as `tool(name)` has it now. A call that is
    not pending, a budget or loop question, or a tool this bundle does not define (an MCP
    tool, say) is left to the decision's own checks."""
    found = next((p for p in pending_approvals(events) if p.call_id == call_id), None)
    if found is None or found.tool_name in (BUDGET_TOOL, LOOP_TOOL):
        return
    entry = tool(found.tool_name)
    if entry is None:
        return
    try:
        entry.validate(found.arguments)
    except InvalidToolInput as exc:
        raise Conflict(
            f"the input schema of tool {found.tool_name!r} changed since this call was "
            f"requested, and its recorded arguments no longer fit ({exc}); it was not run. "
            "Deny it, or ask the agent again.",
            code=SCHEMA_CHANGED,
        ) from None


__all__ = ["SCHEMA_CHANGED", "check_still_valid"]
