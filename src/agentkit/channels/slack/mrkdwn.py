"""Markdown (what models write) to Slack mrkdwn, and long replies split under Slack's limits.

Slack's mrkdwn differs from Markdown: `*bold*`, `_italic_`, `~strike~`, `<url|text>` links,
no headings, and `&`, `<`, `>` must be escaped. Code (fenced blocks and inline spans) is
left as it is apart from the escaping, which Slack also requires there.
"""

from __future__ import annotations

import re

MAX_CHARS = 3000  # a section block's limit; chat.postMessage truncates text far later
FENCE = "```"

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_BOLD_MARK = "\x00"


def escape(text: str) -> str:
    """Slack's three control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inline(text: str) -> str:
    text = _IMAGE.sub(lambda m: f"<{m[2]}|{m[1] or m[2]}>", text)
    text = _LINK.sub(lambda m: f"<{m[2]}|{m[1]}>", text)
    text = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m[2]}{_BOLD_MARK}", text)
    text = _ITALIC.sub(lambda m: f"_{m[1]}_", text)
    text = _STRIKE.sub(lambda m: f"~{m[1]}~", text)
    return text.replace(_BOLD_MARK, "*")


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"*{_convert_spans(heading[1]).strip('*')}*"
    bullet = _BULLET.match(line)
    if bullet:
        line = f"{bullet[1]}• {line[bullet.end() :]}"
    return _convert_spans(line)


def _convert_spans(text: str) -> str:
    """Convert outside inline code spans only."""
    parts = _INLINE_CODE.split(escape(text))
    return "".join(p if p.startswith("`") and p.endswith("`") else _inline(p) for p in parts)


def to_mrkdwn(markdown: str) -> str:
    """`markdown` as Slack mrkdwn."""
    out: list[str] = []
    in_code = False
    for line in markdown.splitlines():
        if line.strip().startswith(FENCE):
            in_code = not in_code
            out.append(FENCE)  # Slack ignores a language tag; drop it so it is not shown
            continue
        out.append(escape(line) if in_code else _line(line))
    return "\n".join(out)


def split(text: str, limit: int = MAX_CHARS) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at paragraph or line ends where
    possible; a code block cut in two is closed and reopened so both halves render."""
    pieces: list[str] = []
    rest = text.strip("\n")
    reopen = False
    while rest:
        head = FENCE + "\n" if reopen else ""
        room = limit - len(head) - len(FENCE) - 1  # leave space to close a fence
        if len(head) + len(rest) <= limit:
            pieces.append(head + rest)
            break
        cut = rest.rfind("\n\n", 0, room)
        if cut <= 0:
            cut = rest.rfind("\n", 0, room)
        if cut <= 0:
            cut = room
        chunk, rest = rest[:cut], rest[cut:].lstrip("\n")
        body = head + chunk
        reopen = body.count(FENCE) % 2 == 1
        pieces.append(body + ("\n" + FENCE if reopen else ""))
    return [p for p in pieces if p.strip()]
