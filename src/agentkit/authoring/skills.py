"""`define_skill`: skills generated from Python, optionally with inline sibling files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SkillDefinition:
    """An on-demand procedure: the description routes, the markdown is loaded on demand."""

    description: str
    markdown: str
    files: Mapping[str, str] = field(default_factory=dict)


def define_skill(
    *, description: str, markdown: str, files: Mapping[str, str] | None = None
) -> SkillDefinition:
    """Define a skill. `files` maps relative paths (`references/x.md`) to their text."""
    if not description.strip():
        raise ValueError("define_skill needs a description")
    for path in files or {}:
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"skill file path must be relative and inside the skill: {path}")
    return SkillDefinition(
        description=description.strip(), markdown=markdown, files=dict(files or {})
    )
