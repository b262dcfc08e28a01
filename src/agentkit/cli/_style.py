"""How the commands print: tables and colour on a terminal, plain text when piped.

Colour follows the common conventions: none when the stream is not a terminal, when
`NO_COLOR` is set to anything but the empty string (no-color.org), or when `TERM=dumb`;
`FORCE_COLOR` turns it on for a non-terminal. Tables are drawn by `rich`, imported only
when something is drawn for a terminal, so `agentkit serve`, piped output and the Lambda
functions never load it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TextIO

# A severity or status word -> its rich style.
_STYLES = {
    "error": "bold red",
    "failed": "bold red",
    "warning": "yellow",
    "flaky": "yellow",
    "info": "cyan",
    "passed": "green",
    "valid": "green",
    "invalid": "bold red",
    "created": "green",
    "built": "green",
}


def is_terminal(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def use_color(out: TextIO) -> bool:
    """Whether to colour what goes to `out`."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_terminal(out)


def fancy(out: TextIO) -> bool:
    """Whether to draw for a person (tables, colour) rather than print plain lines."""
    wanted = is_terminal(out) or bool(os.environ.get("FORCE_COLOR") and use_color(out))
    return wanted and _have_rich()


def _have_rich() -> bool:
    # A dependency, but a trimmed install (a Lambda layer) may lack it: plain text then.
    from importlib.util import find_spec

    return find_spec("rich") is not None


def _console(out: TextIO) -> Any:
    from rich.console import Console

    color = use_color(out)
    return Console(
        file=out,
        no_color=not color,
        force_terminal=True,
        color_system="auto" if color else None,
        highlight=False,
        soft_wrap=False,
    )


def style_for(word: str) -> str:
    return _STYLES.get(word.strip().lower(), "")


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    out: TextIO,
    *,
    title: str | None = None,
    status_column: int | None = None,
) -> None:
    """A table: drawn with rich on a terminal, aligned plain columns otherwise.

    `status_column` names a column whose words (error, passed, ...) are coloured.
    """
    if not fancy(out):
        if title:
            print(title, file=out)
        _plain_table(headers, rows, out)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", header_style="bold", show_edge=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        cells = [
            Text(cell, style=style_for(cell) if i == status_column else "")
            for i, cell in enumerate(row)
        ]
        table.add_row(*cells)
    _console(out).print(table)


def _plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    every = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in every) for i in range(len(headers) - 1)]
    for row in every:
        cells = [row[i].ljust(widths[i]) for i in range(len(widths))]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)


def say(text: str, out: TextIO, *, word: str | None = None) -> None:
    """Print one line; on a colour terminal, `word` (its first occurrence) is coloured."""
    if word is None or not use_color(out) or not fancy(out):
        print(text, file=out)
        return
    from rich.text import Text

    line = Text(text)
    start = text.find(word)
    if start >= 0:
        line.stylize(style_for(word) or "bold", start, start + len(word))
    _console(out).print(line)
