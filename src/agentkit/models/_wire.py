"""Wire-format steps every provider adapter takes the same way.

Each provider streams a tool call's arguments as JSON text in fragments, and the block-based
APIs (Messages, Converse) want consecutive blocks of one role in a single message. The
adapters differ in the shapes around these steps, not in the steps themselves.
"""

from __future__ import annotations

import json
from typing import Any

from agentkit.errors import ModelError


def tool_arguments(provider: str, tool_name: str, raw: str) -> dict[str, Any]:
    """The assembled JSON arguments of one tool call, as a dict.

    Empty text means no arguments; a JSON value that is not an object is wrapped as
    `{"value": ...}` so tools always receive a mapping. Text that is not JSON raises
    `ModelError` naming the provider and the tool.
    """
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"{provider} sent malformed arguments for tool {tool_name!r}: {exc}"
        ) from exc
    if not isinstance(arguments, dict):
        arguments = {"value": arguments}
    return arguments


def add_blocks(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append `blocks` as a `role` message, merged into the last one when it has that role.

    Tool results travel as user blocks, so a result following a user message (or another
    result) joins it: the APIs reject two consecutive messages of one role.
    """
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})
