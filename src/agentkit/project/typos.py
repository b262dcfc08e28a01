"""Keyword typos named where they are made: `max_step=3` gets "did you mean max_steps?"."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# define_agent's keywords: the named parameters and the options agentkit reads.
AGENT_KEYWORDS = (
    "model",
    "max_steps",
    "description",
    "instructions",
    "tool_timeout",
    "stop_grace",
    "name",
    "on_busy",
    "prices",
    "budget",
    "max_turn_seconds",
)
# Accepted for agents written for other hosts; nothing here reads them.
AGENT_NO_EFFECT = ("runtime", "cloud", "local")


def unknown_keyword(key: str, known: Iterable[str]) -> str:
    """A message naming an unknown keyword and, when one is close, the valid one meant."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown keyword {key}{hint}"
