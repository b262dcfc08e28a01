"""A recorded session as an eval case: its inputs as steps, its trajectory as assertions.

The case says what the user said (messages, approval decisions, direct tool calls, in
order) and checks what the agent did: the tools called, in order, the final answer's key
phrases, and how the session ended. It passes on the bundle that produced the session, so
a later change that breaks the conversation fails it.
"""

from __future__ import annotations

import json
import keyword
import re
from typing import Any

from agentkit.events import Event, EventType
from agentkit.replay.recording import Decision, DirectCall, Message, Recording

__all__ = ["case_source", "key_phrases"]

_WORD = re.compile(r"[A-Za-z]{5,}")
_COMMON = frozenset(
    [
        "about",
        "after",
        "again",
        "could",
        "every",
        "other",
        "their",
        "there",
        "these",
        "those",
        "which",
        "while",
        "would",
        "your",
        "yours",
        "where",
        "shall",
        "should",
        "being",
    ]
)


def key_phrases(text: str, limit: int = 3) -> list[str]:
    """Up to `limit` distinctive words of `text`, in order (long, alphabetic, not common)."""
    seen: list[str] = []
    for word in _WORD.findall(text):
        lowered = word.lower()
        if lowered not in _COMMON and lowered not in seen:
            seen.append(lowered)
        if len(seen) == limit:
            break
    return seen


def case_source(events: list[Event], *, description: str | None = None) -> str:
    """The text of an `evals/<name>.eval.py` file reproducing the session of `events`."""
    rec = Recording.of(events)
    steps = _steps(rec)
    assertions = _assertions(rec)
    single = len(steps) == 1 and steps[0].startswith("say(")
    used = ([] if single else steps) + assertions
    names = sorted({"define_eval"} | {s.split("(", 1)[0] for s in used})
    about = description or f"Recorded session {rec.session_id}, exported as a case."
    lines = [f'"""{about}"""', "", *_import(names), "", "case = define_eval("]
    if single:
        lines.append(f"    message={steps[0][4:-1]},")
    else:
        lines.append("    steps=[")
        lines.extend(f"        {s}," for s in steps)
        lines.append("    ],")
    lines.append("    assertions=[")
    lines.extend(f"        {a}," for a in assertions)
    lines.append("    ],")
    lines.append('    tags=["recorded"],')
    lines.append(")")
    return "\n".join(lines) + "\n"


def _import(names: list[str]) -> list[str]:
    one = f"from agentkit.evals import {', '.join(names)}"
    if len(one) <= 88:  # the formatter's default line length
        return [one]
    return ["from agentkit.evals import (", *(f"    {n}," for n in names), ")"]


def _lit(value: Any) -> str:
    """A Python literal, strings in double quotes as the formatter writes them."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _steps(rec: Recording) -> list[str]:
    steps: list[str] = []
    cut = False  # the previous message's turn was interrupted by the next message
    for item in rec.inputs:
        if isinstance(item, Message):
            if cut:
                steps.append(f'interrupt({_lit(item.text)}, after="turn.started")')
            else:
                steps.append(f"say({_lit(item.text)})")
            cut = item.turn is not None and item.turn.interrupted
        elif isinstance(item, Decision):
            call = rec.calls.get(item.call_id)
            tool = _lit(call.tool_name) if call is not None else ""
            steps.append(f"{'approve' if item.decision == 'approve' else 'deny'}({tool})")
        elif isinstance(item, DirectCall):
            steps.append(f"call_tool({_lit(item.call.tool_name)}{_kwargs(item.call.arguments)})")
    return steps


def _kwargs(arguments: dict[str, Any]) -> str:
    if all(k.isidentifier() and not keyword.iskeyword(k) for k in arguments):
        return "".join(f", {k}={_lit(v)}" for k, v in arguments.items())
    return f", **{arguments!r}"


def _assertions(rec: Recording) -> list[str]:
    out: list[str] = []
    failed = any(t.end_type == EventType.TURN_FAILED for t in rec.turns)
    if not failed:
        out.append("succeeded()")
    calls = rec.turn_calls()
    if any(t.interrupted for t in rec.turns):
        # Where an interrupt lands is a race: check only the calls of turns that ended.
        ended = {t.turn_id for t in rec.turns if not t.interrupted}
        out.extend(
            f"called_tool({_lit(c.tool_name)})"
            for c in calls
            if c.turn_id in ended or c.turn_id is None
        )
    else:
        out.append(f"called_tools({', '.join(_lit(c.tool_name) for c in calls)})")
    parked = [c for c in calls if c.approval_index is not None and c.result is None]
    out.extend(f"approval_requested({_lit(c.tool_name)})" for c in parked)
    completed = sum(t.end_type == EventType.TURN_COMPLETED for t in rec.turns)
    out.append(f"turns_completed({completed})")
    replies = [e.data.get("text", "") for e in rec.events if e.type == EventType.MESSAGE_COMPLETED]
    if replies and not parked:
        out.extend(f"reply_contains({_lit(p)})" for p in key_phrases(str(replies[-1])))
    return out
