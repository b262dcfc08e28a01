"""Discovery of skills, subagents, the sandbox workspace and evals."""

from __future__ import annotations

from pathlib import Path

from agentkit.authoring.agent import AgentDefinition
from agentkit.authoring.evals import EvalDefinition, EvalsConfig
from agentkit.authoring.skills import SkillDefinition
from agentkit.project.context import Ctx
from agentkit.project.frontmatter import first_line
from agentkit.project.instructions import discover_instructions
from agentkit.project.manifest import CodeRef, EvalSpec, SkillSpec, SubagentSpec
from agentkit.project.typos import SKILL_KEYS, check_agent_keywords, warn_unknown_keys
from agentkit.project.validation import SLUG_RE

SKILL_FILE = "SKILL.md"
EVAL_SUFFIX = ".eval.py"
EVALS_CONFIG = "evals.config.py"


def discover_skills(ctx: Ctx) -> list[SkillSpec]:
    folder = ctx.agent_dir / "skills"
    if not folder.is_dir():
        return []
    out: dict[str, SkillSpec] = {}
    seen: dict[str, str] = {}  # name: where it was defined
    for entry in ctx.fs.entries(folder):
        name = entry.stem if entry.is_file() else entry.name
        if entry.is_dir():
            spec = _skill_dir(ctx, entry)
        elif entry.suffix == ".md":
            spec = _skill_md(ctx, entry)
        elif entry.suffix == ".py" and entry.name != "__init__.py":
            spec = _skill_py(ctx, entry)
        else:
            if entry.name != "__init__.py":
                ctx.ignored(entry, "skills are <name>.md, <name>/SKILL.md or <name>.py")
            continue
        if spec is None:
            continue
        if not SLUG_RE.match(name):
            ctx.diag.add(
                "name.invalid",
                spec.source,
                f"skill name {name!r} must match [A-Za-z0-9][A-Za-z0-9_-]*",
            )
            continue
        if not ctx.first_of_name("skill", name, spec.source, seen):
            continue
        out[name] = spec
        seen[name] = spec.source
    return list(out.values())


def _missing_description(ctx: Ctx, path: Path, hint: str) -> None:
    ctx.diag.add("skill.missing_description", ctx.fs.rel(path), hint)


def _skill_md(ctx: Ctx, path: Path) -> SkillSpec | None:
    doc = ctx.markdown(path)
    if doc is None:
        return None
    warn_unknown_keys(ctx, path, doc.meta, SKILL_KEYS, "skill")
    description = str(doc.meta.get("description") or "").strip() or first_line(doc.body)
    if not description:
        _missing_description(
            ctx, path, "the skill is empty: add `description:` frontmatter and a body"
        )
        return None
    return SkillSpec(
        name=path.stem, description=description, markdown=doc.body, source=ctx.fs.rel(path)
    )


def _skill_dir(ctx: Ctx, folder: Path) -> SkillSpec | None:
    main = folder / SKILL_FILE
    if not main.is_file():
        ctx.diag.add(
            "skill.missing_file", ctx.fs.rel(folder), f"a skill folder needs a {SKILL_FILE}"
        )
        return None
    doc = ctx.markdown(main)
    if doc is None:
        return None
    warn_unknown_keys(ctx, main, doc.meta, SKILL_KEYS, "skill")
    description = str(doc.meta.get("description") or "").strip()
    if not description:
        _missing_description(
            ctx, main, "SKILL.md needs `description:` frontmatter saying when to use the skill"
        )
        return None
    files: dict[str, str] = {}
    for rel in ctx.fs.list_files(folder):
        if rel == SKILL_FILE:
            continue
        text = ctx.fs.read_text(folder / rel, binary_ok=True)
        if text is not None:
            files[rel] = text
    return SkillSpec(
        name=folder.name,
        description=description,
        markdown=doc.body,
        files=files,
        source=ctx.fs.rel(main),
    )


def _skill_py(ctx: Ctx, path: Path) -> SkillSpec | None:
    found = ctx.importer.single(path, SkillDefinition, "skill")
    if found is None:
        return None
    _, skill = found
    return SkillSpec(
        name=path.stem,
        description=skill.description,
        markdown=skill.markdown,
        files=dict(skill.files),
        source=ctx.fs.rel(path),
    )


IGNORED_IN_SUBAGENT = ("tools", "skills", "mcp-connections")


def discover_subagents(ctx: Ctx) -> list[SubagentSpec]:
    folder = ctx.agent_dir / "subagents"
    if not folder.is_dir():
        return []
    out: list[SubagentSpec] = []
    for entry in ctx.fs.entries(folder):
        if not entry.is_dir():
            if entry.name != "__init__.py":
                ctx.ignored(
                    entry, "a subagent is a folder: subagents/<id>/agent.py + instructions.md"
                )
            continue
        if not SLUG_RE.match(entry.name):
            ctx.diag.add(
                "name.invalid",
                ctx.fs.rel(entry),
                f"subagent id {entry.name!r} must match [A-Za-z0-9][A-Za-z0-9_-]*",
            )
            continue
        spec = _subagent(ctx, entry)
        if spec is not None:
            out.append(spec)
    return out


def _subagent(ctx: Ctx, folder: Path) -> SubagentSpec | None:
    for sub in IGNORED_IN_SUBAGENT:
        if (folder / sub).exists():
            ctx.diag.add(
                "subagent.ignored_folder",
                ctx.fs.rel(folder / sub),
                f"subagents use the parent's {sub}; this folder is ignored",
            )
    if (folder / "subagents").exists():
        ctx.diag.add(
            "subagent.nested", ctx.fs.rel(folder / "subagents"), "subagents cannot have subagents"
        )
    agent_py = folder / "agent.py"
    definition: AgentDefinition | None = None
    ref: CodeRef | None = None
    if agent_py.is_file():
        found = ctx.importer.single(agent_py, AgentDefinition, "define_agent")
        if found is None:
            return None
        ref, definition = found
        check_agent_keywords(ctx, agent_py, definition.options)
    description = (definition.description or "").strip() if definition else ""
    if not description:
        ctx.diag.add(
            "subagent.missing_description",
            ctx.fs.rel(agent_py),
            "set define_agent(description=...): the parent reads it to decide when to delegate",
        )
        return None
    assert definition is not None
    model = ctx.check_agent_model(definition.model, agent_py)
    instructions = discover_instructions(ctx, folder, inline=definition.instructions)
    if instructions is None or not instructions.strip():
        ctx.diag.add(
            "subagent.missing_instructions",
            ctx.fs.rel(folder),
            "add instructions.md (or instructions= in agent.py) for the subagent",
        )
        return None
    return SubagentSpec(
        name=folder.name,
        description=description,
        model=model,
        instructions=instructions,
        source=ctx.fs.rel(folder),
        ref=ref,
    )


def discover_workspace(ctx: Ctx) -> list[str]:
    folder = ctx.agent_dir / "sandbox" / "workspace"
    if not folder.is_dir() or not ctx.fs.inside(folder):
        return []
    return ctx.fs.list_files(folder)


def discover_evals(ctx: Ctx) -> tuple[list[EvalSpec], dict[str, object] | None]:
    folder = ctx.root / "evals"
    if not folder.is_dir() or not ctx.fs.inside(folder):
        return [], None
    evals: list[EvalSpec] = []
    for rel in ctx.fs.list_files(folder):
        if not rel.endswith(EVAL_SUFFIX):
            continue
        found = ctx.importer.single(folder / rel, EvalDefinition, "eval")
        if found is None:
            continue
        ref, case = found
        evals.append(
            EvalSpec(
                id=rel[: -len(EVAL_SUFFIX)],
                tags=sorted(case.tags),
                ref=ref,
                description=case.description,
            )
        )
    config_path = folder / EVALS_CONFIG
    config: dict[str, object] | None = None
    if config_path.is_file():
        found = ctx.importer.single(config_path, EvalsConfig, "evals config")
        if found is not None:
            _, cfg = found
            config = {
                "maxConcurrency": cfg.max_concurrency,
                "timeout": cfg.timeout,
                "trials": cfg.trials,
                "maxTrials": cfg.max_trials,
                "flakyFails": cfg.flaky_fails,
                "maxPlaygroundRuns": cfg.max_playground_runs,
                "persistRuns": cfg.persist_runs,
            }
            model = ctx.check_model(cfg.model, config_path)
            if model is not None:
                config["model"] = model
    elif evals:
        ctx.diag.add(
            "evals.config_missing",
            "evals",
            "add evals/evals.config.py with define_evals_config(max_concurrency=...)",
        )
    return evals, config
