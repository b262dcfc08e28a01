"""Walk a project's `agent/` folder (and `evals/`) into a `Manifest`.

Discovery never raises on user mistakes: every problem becomes a diagnostic in the manifest.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from agentkit.authoring.agent import AgentDefinition
from agentkit.project.content import (
    discover_evals,
    discover_skills,
    discover_subagents,
    discover_workspace,
)
from agentkit.project.context import Ctx
from agentkit.project.instructions import discover_instructions
from agentkit.project.loader import ModuleScope
from agentkit.project.manifest import AgentSpec, Manifest
from agentkit.project.surface import (
    discover_ab_config,
    discover_abs,
    discover_channels,
    discover_hooks,
    discover_mcp,
    discover_schedules,
    discover_tools,
)
from agentkit.project.typos import check_agent_keywords
from agentkit.project.validation import slug_problem

# Top-level entries of agent/ and what (if anything) discovers them.
KNOWN_ENTRIES = frozenset(
    {
        "agent.py",
        "instructions.md",
        "instructions.py",
        "instructions",
        "tools",
        "skills",
        "mcp-connections",
        "mcp.lock",  # pinned MCP tool definitions (`agentkit mcp lock`)
        "subagents",
        "channels",
        "hooks",
        "ab.py",
        "ab",
        "ab.config.py",
        "schedules",
        "sandbox",
        "lib",
        "evals",  # silently ignored: evals live at the project root
        "__init__.py",
    }
)


def project_name(root: Path, ctx: Ctx) -> str:
    """`[project].name` from pyproject.toml, falling back to the folder name."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = ctx.fs.read_text(pyproject)
        if text is not None:
            try:
                name = tomllib.loads(text).get("project", {}).get("name")
            except tomllib.TOMLDecodeError as exc:
                ctx.diag.add("file.unreadable", "pyproject.toml", f"invalid TOML: {exc}", "warning")
                name = None
            if isinstance(name, str) and name.strip():
                return name.strip()
    return root.name


def discover_project(root: Path) -> tuple[Manifest, ModuleScope]:
    """Discover the project at `root` (absolute). Returns the manifest and the module scope
    the user's files were imported into (so a bundle can reuse them)."""
    ctx = Ctx.create(root)
    slug = root.name
    problem = slug_problem(slug)
    if problem:
        ctx.diag.add("slug.invalid", ".", f"the project folder name is the URL slug: {problem}")
    if not ctx.agent_dir.is_dir():
        ctx.diag.add(
            "project.no_agent_dir", "agent", "create agent/ with an instructions.md (agentkit init)"
        )
        agent = AgentSpec(name=project_name(root, ctx), slug=slug)
        manifest = Manifest(agent=agent, instructions="", diagnostics=ctx.diag.sorted())
        return manifest, ctx.importer.scope

    agent, inline = _agent_spec(ctx, slug)
    instructions = discover_instructions(ctx, ctx.agent_dir, inline=inline)
    if instructions is None:
        if not any(d.code == "instructions.conflict" for d in ctx.diag.items):
            _instructions_missing(ctx)
        instructions = ""
    elif not instructions.strip():
        ctx.diag.add("instructions.empty", "agent/instructions.md", "the instructions are empty")
    _check_top_level(ctx)
    evals, evals_config = discover_evals(ctx)
    manifest = Manifest(
        agent=agent,
        instructions=instructions,
        tools=sorted(discover_tools(ctx), key=lambda t: t.name),
        skills=sorted(discover_skills(ctx), key=lambda s: s.name),
        subagents=sorted(discover_subagents(ctx), key=lambda s: s.name),
        mcp_connections=sorted(discover_mcp(ctx), key=lambda m: m.name),
        mcp_lock=_mcp_lock(ctx),
        channels=sorted(discover_channels(ctx), key=lambda c: c.name),
        schedules=sorted(discover_schedules(ctx), key=lambda s: s.id),
        hooks=sorted(discover_hooks(ctx), key=lambda h: h.name),
        abs=sorted(discover_abs(ctx), key=lambda a: a.name),
        ab_config=discover_ab_config(ctx),
        evals=sorted(evals, key=lambda e: e.id),
        evals_config=evals_config,
        workspace_files=discover_workspace(ctx),
        diagnostics=[],
    )
    return manifest.model_copy(update={"diagnostics": ctx.diag.sorted()}), ctx.importer.scope


def _mcp_lock(ctx: Ctx) -> dict[str, Any] | None:
    """`agent/mcp.lock`, baked into the manifest so deployments pin the same tools."""
    from agentkit.project.mcp_lock import LOCK_FILE, read_lock

    try:
        lock = read_lock(ctx.agent_dir)
    except ValueError as exc:
        ctx.diag.add("mcp.lock_invalid", f"agent/{LOCK_FILE}", str(exc))
        return None
    return lock.to_json() if lock is not None else None


def _instructions_missing(ctx: Ctx) -> None:
    if (ctx.agent_dir / "instructions.py").is_file():
        # it exists but gave no instructions (its own diagnostic says why, e.g. import.failed)
        path, message = (
            "agent/instructions.py",
            "the root agent has no instructions: agent/instructions.py defined none "
            "(fix the error reported for it)",
        )
    else:
        path = "agent/instructions.md"
        message = "the root agent needs instructions: write agent/instructions.md"
    ctx.diag.add("instructions.missing", path, message)


def _agent_spec(ctx: Ctx, slug: str) -> tuple[AgentSpec, str | None]:
    """The root agent's spec and its inline instructions (if agent.py has them)."""
    path = ctx.agent_dir / "agent.py"
    definition: AgentDefinition | None = None
    ref = None
    if path.is_file():
        found = ctx.importer.single(path, AgentDefinition, "define_agent")
        if found is not None:
            ref, definition = found
    name = (definition.name if definition else None) or project_name(ctx.root, ctx)
    if definition is None:
        return AgentSpec(name=name, slug=slug, ref=ref), None
    options = dict(definition.options)
    check_agent_keywords(ctx, path, options)
    try:
        options = json.loads(json.dumps(options, sort_keys=True))
    except (TypeError, ValueError) as exc:
        ctx.diag.add("agent.options_not_json", "agent/agent.py", f"define_agent options: {exc}")
        options = {}
    spec = AgentSpec(
        name=name,
        slug=slug,
        model=ctx.check_agent_model(definition.model, path),
        max_steps=definition.max_steps,
        tool_timeout=definition.tool_timeout,
        stop_grace=definition.stop_grace,
        options=options,
        ref=ref,
    )
    return spec, definition.instructions


def _check_top_level(ctx: Ctx) -> None:
    for entry in ctx.fs.entries(ctx.agent_dir):
        if entry.name not in KNOWN_ENTRIES:
            ctx.ignored(
                entry,
                "not a known agent/ path; shared code goes in agent/lib/ "
                "(see the project layout docs)",
            )
