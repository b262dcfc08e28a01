"""Writes the blocking client (`_sync.py`) from the asyncio one (`_async.py`).

The two clients are the same code with and without `async`/`await`, so only the async one
is written by hand. This is the approach httpcore takes: a short list of textual
substitutions, each on word boundaries, then the project's own import sorting and
formatting (lines that lost an `await` may now fit on one). A substitution that no longer
matches anything is an error, so the list cannot rot.

    python -m agentkit.client._unasync          # rewrite _sync.py (`make unasync`)
    python -m agentkit.client._unasync --check  # exit 1 if _sync.py is out of date
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = HERE / "_async.py"
TARGET = HERE / "_sync.py"

HEADER = "# Generated from _async.py by `make unasync`: edit that file, not this one.\n"

# (pattern, replacement), applied in order to every line. Specific lines first.
SUBSTITUTIONS: list[tuple[str, str]] = [
    (
        r'"""`AsyncClient` and `AsyncSession`: the asyncio client of one agent\'s HTTP API '
        r"\(the same",
        '"""`Client` and `Session`: the blocking client of one agent\'s HTTP API (the same',
    ),
    (r"calls as `Client`, awaited\)\.", "calls as the asyncio client, not awaited)."),
    (r"import asyncio", "import threading"),
    (r"asyncio\.Lock", "threading.Lock"),
    (r"asyncio\.sleep", "time.sleep"),
    (r"over ASGI", "over WSGI"),
    (r"AsyncGenerator\[(\w+), None\]", r"Generator[\1, None, None]"),
    (r"AsyncGenerator", "Generator"),
    (r"AsyncIterator", "Iterator"),
    (r"AsyncBaseTransport", "BaseTransport"),
    (r"Async(Client|Session)", r"\1"),
    (r"async def", "def"),
    (r"async with", "with"),
    (r"async for", "for"),
    (r"await ", ""),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"aclosing", "closing"),
    (r"aclose", "close"),
    (r"aread", "read"),
    (r"aiter_text", "iter_text"),
]
_COMPILED = [(re.compile(r"(?:^|\b)" + pattern), repl) for pattern, repl in SUBSTITUTIONS]


def unasync(source: str) -> str:
    """The sync source for async `source`, before formatting; `ValueError` if a
    substitution matched nothing."""
    used: set[int] = set()
    lines = []
    for line in source.splitlines(keepends=True):
        for number, (regex, repl) in enumerate(_COMPILED):
            line, count = regex.subn(repl, line)
            if count:
                used.add(number)
        lines.append(line)
    unused = [SUBSTITUTIONS[n][0] for n in range(len(SUBSTITUTIONS)) if n not in used]
    if unused:
        raise ValueError(f"substitutions that matched nothing: {unused}")
    return HEADER + "".join(lines)


def _ruff(args: list[str], source: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def generate() -> str:
    """The text `_sync.py` should hold: `_async.py` unasynced, import-sorted, formatted."""
    text = unasync(SOURCE.read_text(encoding="utf-8"))
    text = _ruff(["check", "--quiet", "--select", "I", "--fix", "--exit-zero"], text)
    return _ruff(["format", "--quiet"], text)


def main(argv: list[str]) -> int:
    wanted = generate()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if "--check" in argv:
        if wanted == current:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            wanted.splitlines(keepends=True),
            str(TARGET.name),
            "regenerated",
        )
        sys.stderr.write("".join(diff))
        sys.stderr.write("_sync.py is out of date: run `make unasync`\n")
        return 1
    if wanted != current:
        TARGET.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
