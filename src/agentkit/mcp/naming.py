"""The names MCP tools are offered under: `mcp__<connection>__<tool>`.

Every provider accepts `[A-Za-z0-9_-]{1,64}`, so:

1. any other character becomes `_`;
2. a name longer than 64 characters keeps its first 55 and gains `_` plus 8 hex digits
   of the SHA-256 of the unsanitized `mcp__<connection>__<tool>`;
3. when two tools still end up with one name, the later one (tools are named in order of
   connection, then unsanitized tool name) gets the same hash suffix.

The same inputs always give the same names, so `mcp.lock` and the model's history stay valid.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_LEN = 64
_KEEP = MAX_LEN - 9
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def raw_name(connection: str, tool: str) -> str:
    return f"mcp__{connection}__{tool}"


def _suffixed(clean: str, raw: str) -> str:
    return f"{clean[:_KEEP]}_{hashlib.sha256(raw.encode()).hexdigest()[:8]}"


def exposed_name(connection: str, tool: str) -> str:
    """The name of one tool, before collisions are considered."""
    raw = raw_name(connection, tool)
    clean = _BAD.sub("_", raw)
    return clean if len(clean) <= MAX_LEN else _suffixed(clean, raw)


def assign_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Unique exposed names for `(connection, tool)` pairs."""
    out: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for pair in sorted(set(pairs)):
        name = exposed_name(*pair)
        if name in taken:
            name = _suffixed(name, raw_name(*pair))
        taken.add(name)
        out[pair] = name
    return out
