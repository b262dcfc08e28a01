"""What a `context.compacted` event does to the model's view of the conversation.

The conversation fold calls `apply_compacted` when it meets the event: the messages of
the turns up to `throughIndex` give way to the summary (or, for `window`, to a short note
that older turns were dropped). Two kinds of message always survive:

- loaded skills: a `load_skill` or `read_skill_file` call stays, with its result, so what
  the model was told to follow is never lost;
- everything after `throughIndex`: the turns since, and the current turn.

The cut only ever falls at the end of a whole turn, where every tool call has its result,
so a call is never separated from its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentkit.authoring.tools import BUILTIN_TOOL_NAMES
from agentkit.models.base import AssistantMessage, Message, ToolResultMessage, UserMessage

SKILL_TOOLS = frozenset(n for n in BUILTIN_TOOL_NAMES if n != "task")
SUMMARY_HEADING = "Summary of the earlier conversation (older turns were compacted):"
WINDOW_NOTE = "(Older turns of this conversation were dropped to fit the context window.)"

TurnEnd = tuple[int, int]  # (index of a turn's last event, messages in the view up to it)


def compacted_note(data: Mapping[str, Any]) -> UserMessage:
    """The message that stands for the compacted turns."""
    summary = data.get("summary")
    if isinstance(summary, str) and summary.strip():
        return UserMessage(f"{SUMMARY_HEADING}\n\n{summary.strip()}")
    return UserMessage(WINDOW_NOTE)


def kept_skills(dropped: Sequence[Message]) -> list[Message]:
    """The skill calls among `dropped`, each with its result (and nothing else)."""
    wanted: set[str] = set()
    out: list[Message] = []
    for message in dropped:
        if isinstance(message, AssistantMessage):
            calls = tuple(c for c in message.tool_calls if c.name in SKILL_TOOLS)
            if calls:
                wanted.update(c.id for c in calls)
                out.append(AssistantMessage(tool_calls=calls))
        elif isinstance(message, ToolResultMessage) and message.call_id in wanted:
            out.append(message)
    return out


def cut_at(ends: Sequence[TurnEnd], through_index: int) -> int:
    """How many leading messages belong to the turns ending at or before `through_index`."""
    cut = 0
    for index, count in ends:
        if index <= through_index:
            cut = max(cut, count)
    return cut


def apply_compacted(
    messages: list[Message], ends: list[TurnEnd], data: Mapping[str, Any]
) -> tuple[list[Message], list[TurnEnd]]:
    """The view after a `context.compacted` event with payload `data`."""
    through = data.get("throughIndex")
    if isinstance(through, bool) or not isinstance(through, int):
        return messages, ends  # a malformed event changes nothing rather than lose history
    cut = cut_at(ends, through)
    if cut == 0:
        return messages, ends
    head = [compacted_note(data), *kept_skills(messages[:cut])]
    shift = len(head) - cut
    kept_ends = [(index, count + shift) for index, count in ends if index > through]
    return [*head, *messages[cut:]], kept_ends


__all__ = [
    "SUMMARY_HEADING",
    "WINDOW_NOTE",
    "TurnEnd",
    "apply_compacted",
    "compacted_note",
    "cut_at",
    "kept_skills",
]
