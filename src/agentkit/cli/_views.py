"""Readable views of command results for a terminal (the JSON forms are the data)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from agentkit.cli._style import print_table, say


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_trajectory(result: dict[str, Any], out: TextIO) -> None:
    """A turn's trajectory (see `agentkit.engine.folds.trajectory`) as a person reads it."""
    status = "failed" if result.get("error") else result.get("status", "")
    say(
        f"session {result.get('sessionId')}  model {result.get('model')}  {status}",
        out,
        word=status or None,
    )
    calls = result.get("toolCalls") or []
    if calls:
        rows = [
            [
                c["toolName"],
                _short(c.get("arguments")),
                "error" if c.get("isError") else "ok",
                _short(c.get("error") if c.get("isError") else c.get("result")),
                f"{c.get('durationMs', 0)} ms",
            ]
            for c in calls
        ]
        print_table(["tool", "arguments", "", "result", "time"], rows, out, status_column=2)
    for approval in result.get("approvals") or []:
        say(
            f"waiting for approval: {approval['toolName']} ({approval['callId']})",
            out,
            word="waiting",
        )
    if result.get("reply"):
        print(f"\n{result['reply']}\n", file=out)
    if result.get("error"):
        say(f"error: {result['error']}", out, word="error")
    usage = result.get("usage") or {}
    print(
        f"tokens: {usage.get('inputTokens', 0)} in, {usage.get('outputTokens', 0)} out",
        file=out,
    )
