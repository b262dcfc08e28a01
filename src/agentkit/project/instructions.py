"""Instructions in their three forms: `instructions.md`, `instructions.py`, `instructions/`."""

from __future__ import annotations

from pathlib import Path

from agentkit.authoring.agent import InstructionsDefinition
from agentkit.project.context import Ctx


def discover_instructions(ctx: Ctx, folder: Path, *, inline: str | None = None) -> str | None:
    """The composed instructions of the agent in `folder`, or None when there are none.

    Exactly one form may exist (an inline `instructions=` in agent.py counts as one).
    """
    md, py, directory = (
        folder / "instructions.md",
        folder / "instructions.py",
        folder / "instructions",
    )
    forms = [p for p in (md, py, directory) if p.exists() and ctx.fs.inside(p)]
    names = [ctx.fs.rel(p) for p in forms] + (["agent.py (inline instructions)"] if inline else [])
    if len(names) > 1:
        ctx.diag.add(
            "instructions.conflict",
            ctx.fs.rel(folder),
            f"instructions are defined more than once ({', '.join(names)}); keep one form",
        )
        return None
    if inline is not None:
        return inline
    if not forms:
        return None
    found = forms[0]
    if found == md:
        doc = ctx.markdown(md)
        return doc.body if doc is not None else None
    if found == py:
        return _from_python(ctx, py)
    return _from_directory(ctx, directory)


def _from_python(ctx: Ctx, path: Path) -> str | None:
    mod = ctx.importer.module(path)
    if mod is None:
        return None
    defs = [v for v in vars(mod).values() if isinstance(v, InstructionsDefinition)]
    if len({id(d) for d in defs}) > 1:
        ctx.diag.add("definition.multiple", ctx.fs.rel(path), "define_instructions is used twice")
        return None
    if defs:
        return defs[0].markdown
    plain = getattr(mod, "instructions", None)
    if isinstance(plain, str):
        return plain
    ctx.diag.add(
        "definition.none",
        ctx.fs.rel(path),
        "instructions.py must define `define_instructions(...)` or a string named `instructions`",
    )
    return None


def _from_directory(ctx: Ctx, directory: Path) -> str | None:
    parts: list[str] = []
    for entry in ctx.fs.entries(directory):
        if not (entry.is_file() and entry.suffix == ".md"):
            ctx.ignored(entry, "only .md files are composed into the instructions")
            continue
        doc = ctx.markdown(entry)
        if doc is not None and doc.body.strip():
            parts.append(doc.body.strip("\n"))
    return "\n\n".join(parts) + "\n" if parts else ""
