"""A string that matches a regular expression, built from Python's own regex parser.

Good for the patterns tool schemas use (`^\\d{5}$`, `^[A-Z]{2}-\\d+$`, alternations);
lookarounds and back-references are skipped, and the caller checks the result.
"""

from __future__ import annotations

import re

# The parser behind `re.compile`; private, but stable across the versions we support and
# the only way to read a pattern's structure without a third-party package.
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

_CATEGORY_CHAR = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
}
_REPEAT_CAP = 8


def string_matching(pattern: str) -> str | None:
    """A string that `re.search(pattern, ...)` accepts, or None if none could be built."""
    try:
        tree = sre_parse.parse(pattern)
        text = _emit(list(tree))
        regex = re.compile(pattern)
    except (re.error, RecursionError, ValueError, TypeError):
        return None
    return text if regex.search(text) else None


def _emit(items: list[Any]) -> str:
    out: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_pick_in(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            count = max(low, 1) if high == sre.MAXREPEAT or high >= 1 else 0
            count = min(count, high if high != sre.MAXREPEAT else _REPEAT_CAP)
            count = max(count, low)
            out.append("".join(_emit(list(sub)) for _ in range(count)))
        elif name == "SUBPATTERN":
            out.append(_emit(list(arg[-1])))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(list(arg)))
        elif name == "BRANCH":
            out.append(_emit(list(arg[1][0])))
        # AT (anchors), ASSERT, GROUPREF and the like add no characters.
    return "".join(out)


def _pick_in(items: list[Any]) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        banned = {chr(a) for op, a in items if str(op) == "LITERAL"}
        for candidate in "aA0-_x":
            if candidate not in banned and not _in_ranges(candidate, items):
                return candidate
        return "~"
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return _CATEGORY_CHAR.get(str(arg), "a")
    return "a"


def _in_ranges(char: str, items: list[Any]) -> bool:
    code = ord(char)
    return any(str(op) == "RANGE" and arg[0] <= code <= arg[1] for op, arg in items)
