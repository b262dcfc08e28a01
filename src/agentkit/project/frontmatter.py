"""Markdown files with an optional YAML frontmatter block (`---` ... `---`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class FrontmatterError(ValueError):
    """The frontmatter block is not valid YAML mapping, or is never closed."""


@dataclass(frozen=True, slots=True)
class MarkdownDoc:
    meta: dict[str, Any]
    body: str


def parse_markdown(text: str) -> MarkdownDoc:
    """Split `text` into its frontmatter mapping and its body.

    A file that does not start with a `---` line has no frontmatter. Raises
    `FrontmatterError` for an unclosed block, invalid YAML or a non-mapping value.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return MarkdownDoc(meta={}, body=text)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            raw = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            break
    else:
        raise FrontmatterError("the frontmatter block opened with '---' is never closed")
    # Imported here: a deployed function reads the baked manifest and never parses YAML,
    # and PyYAML is a noticeable part of a cold start that would import it for nothing.
    import yaml

    try:
        meta = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"frontmatter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise FrontmatterError("frontmatter must be a mapping of `key: value` lines")
    return MarkdownDoc(meta={str(k): v for k, v in meta.items()}, body=body.lstrip("\n"))


def first_line(body: str) -> str:
    """The first non-empty line of a markdown body, without heading marks."""
    for line in body.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped
    return ""
