"""Block Kit for approvals: the request with Approve / Deny buttons, and its decided form.

Each button's value carries the session and call ids (Slack signs the interaction payload
that echoes them back, so they cannot be forged by a third party).
"""

from __future__ import annotations

import json
from typing import Any

from agentkit.channels.slack.mrkdwn import escape

APPROVE = "agentkit_approve"
DENY = "agentkit_deny"
ACTIONS = {APPROVE: "approve", DENY: "deny"}
MAX_ARGS = 2800


def _arguments(arguments: Any) -> str:
    text = json.dumps(arguments or {}, indent=2, sort_keys=True, default=str)
    if len(text) > MAX_ARGS:
        text = text[:MAX_ARGS] + "\n…"
    return f"```{escape(text)}```"


def approval_text(tool: str, call_id: str) -> str:
    return f"The agent wants to run `{escape(tool)}` and needs approval (call `{call_id}`)."


def approval_blocks(
    session_id: str, call_id: str, tool: str, arguments: Any
) -> list[dict[str, Any]]:
    def button(action: str, label: str, style: str) -> dict[str, Any]:
        value = json.dumps({"s": session_id, "c": call_id, "t": tool}, separators=(",", ":"))
        return {
            "type": "button",
            "action_id": action,
            "text": {"type": "plain_text", "text": label},
            "style": style,
            "value": value,
        }

    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": approval_text(tool, call_id)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _arguments(arguments)}},
        {
            "type": "actions",
            "block_id": f"approval:{call_id}"[:255],
            "elements": [
                button(APPROVE, "Approve", "primary"),
                button(DENY, "Deny", "danger"),
            ],
        },
    ]


def decided_blocks(
    tool: str, call_id: str, decision: str, user: str
) -> tuple[str, list[dict[str, Any]]]:
    """The approval message once decided: no buttons, who decided what."""
    verb = "Approved" if decision == "approve" else "Denied"
    mark = ":white_check_mark:" if decision == "approve" else ":no_entry_sign:"
    line = f"{mark} {verb} by <@{user}>: `{escape(tool)}` (call `{call_id}`)."
    return line, [
        {"type": "section", "text": {"type": "mrkdwn", "text": approval_text(tool, call_id)}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": line}]},
    ]
