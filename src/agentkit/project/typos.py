"""Keyword typos named where they are made: `max_step=3` gets "did you mean max_steps?"."""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

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
    "context_window",
    "compaction",
    "compact_at",
    "max_tool_result_tokens",
    "compaction_model",
    "loop_guard",
    "loop_repeat",
    "loop_idle_steps",
)
# Accepted for agents written for other hosts; nothing here reads them.
AGENT_NO_EFFECT = ("runtime", "cloud", "local")


def unknown_keyword(key: str, known: Iterable[str]) -> str:
    """A message naming an unknown keyword and, when one is close, the valid one meant."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown keyword {key}{hint}"


def check_agent_keywords(ctx: Any, path: Path, options: Mapping[str, object]) -> None:
    """An error per unknown `define_agent` keyword, a warning per one with no effect here.

    The same for the root agent and a subagent: both are written with `define_agent`.
    """
    for key in sorted(options):
        if key in AGENT_NO_EFFECT:
            ctx.diag.add(
                "agent.option_no_effect",
                ctx.fs.rel(path),
                f"define_agent({key}=...) has no effect on this host; remove it",
            )
        elif key not in AGENT_KEYWORDS:
            message = unknown_keyword(key, AGENT_KEYWORDS)
            ctx.diag.add("agent.unknown_option", ctx.fs.rel(path), f"define_agent: {message}")


# The frontmatter keys agentkit reads; a skill also keeps the Agent Skills format's own keys.
SCHEDULE_KEYS = ("cron", "catch_up")
SKILL_KEYS = ("name", "description", "license", "allowed-tools", "metadata", "compatibility")


def warn_unknown_keys(
    ctx: Any, path: Path, meta: Mapping[str, object], known: Sequence[str], what: str
) -> None:
    """A warning per frontmatter key nothing reads (`corn:` instead of `cron:`)."""
    for key in sorted(str(k) for k in meta):
        if key not in known:
            message = unknown_keyword(key, known).replace(
                f"keyword {key}", f"frontmatter key {key} (ignored)", 1
            )
            ctx.diag.add(f"{what}.unknown_key", ctx.fs.rel(path), message)


# Pydantic warns (a deprecation, hidden by default) and keeps an unknown `Field(defualt=6)`
# keyword as JSON Schema extra: the default the author meant is silently not set.
FIELD_EXTRA_WARNING = r"Using extra keyword arguments on `Field`"
_FIELD_EXTRA_KEYS = re.compile(r"\(Extra keys: ([^)]*)\)")


def field_keyword_typos(warning: str) -> list[str]:
    """For pydantic's unknown-`Field`-keyword warning: one message per keyword; else empty."""
    match = _FIELD_EXTRA_KEYS.search(warning) if FIELD_EXTRA_WARNING in warning else None
    if match is None:
        return []
    import pydantic  # late: only a project whose import warned pays for the signature

    known = [p for p in inspect.signature(pydantic.Field).parameters if p != "extra"]
    out = []
    for key in re.findall(r"'([^']+)'", match.group(1)):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        out.append(f"Field({key}=...) is not a pydantic Field keyword, so it is ignored{hint}")
    return out


_UNEXPECTED = re.compile(r"(\w+)\(\) got an unexpected keyword argument '(\w+)'")


def unexpected_keyword_hint(exc: BaseException) -> str:
    """For `define_tool(descriptin=...)` and the like: the valid keyword meant, if one is close.

    Empty for any other error, and for functions that are not agentkit's `define_*`.
    """
    match = _UNEXPECTED.search(str(exc)) if isinstance(exc, TypeError) else None
    if match is None or not match.group(1).startswith("define_"):
        return ""
    # The public define_* functions, where they are defined (not through the `agentkit`
    # facade, which names the whole package).
    from agentkit.authoring import ab, agent, channels, evals, hooks, mcp, schedules, skills, tools

    owners = (ab, agent, channels, evals, hooks, mcp, schedules, skills, tools)
    function = next(
        (getattr(m, match.group(1)) for m in owners if hasattr(m, match.group(1))), None
    )
    if function is None:
        return ""
    known = [p for p in inspect.signature(function).parameters if p not in ("fn", "self")]
    close = difflib.get_close_matches(match.group(2), known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
