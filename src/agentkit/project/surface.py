"""Discovery of the code-defined surface: tools, MCP connections, channels, hooks, A/B
experiments and schedules. Identity comes from the file name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentkit.authoring.ab import AbConfig, AbDefinition
from agentkit.authoring.channels import ChannelDefinition
from agentkit.authoring.hooks import HookDefinition
from agentkit.authoring.mcp import McpConnectionDefinition, env_vars
from agentkit.authoring.schedules import ScheduleDefinition
from agentkit.authoring.tools import ToolDefinition
from agentkit.project.context import Ctx
from agentkit.project.manifest import (
    AbSpec,
    ChannelSpec,
    HookSpec,
    McpConnectionSpec,
    RouteSpec,
    ScheduleSpec,
    ToolSpec,
)
from agentkit.project.typos import SCHEDULE_KEYS, warn_unknown_keys
from agentkit.project.validation import (
    BUILTIN_TOOLS,
    SLUG_RE,
    TOOL_NAME_RE,
    cron_aws_problem,
    cron_problem,
)


def python_files(ctx: Ctx, folder: Path, what: str) -> list[Path]:
    """The `.py` files of a discovery folder; anything else is reported and skipped."""
    if not folder.is_dir():
        return []
    out = []
    for entry in ctx.fs.entries(folder):
        if entry.is_file() and entry.suffix == ".py" and entry.name != "__init__.py":
            out.append(entry)
        elif entry.name != "__init__.py":
            ctx.ignored(entry, f"only .py files define {what}s here; this entry is ignored")
    return out


def _name_ok(ctx: Ctx, path: Path, name: str, what: str) -> bool:
    if SLUG_RE.match(name):
        return True
    ctx.diag.add(
        "name.invalid",
        ctx.fs.rel(path),
        f"{what} name {name!r} (from the file name) must match [A-Za-z0-9][A-Za-z0-9_-]*",
    )
    return False


def discover_tools(ctx: Ctx) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    seen: dict[str, str] = {}
    for path in python_files(ctx, ctx.agent_dir / "tools", "tool"):
        name, rel = path.stem, ctx.fs.rel(path)
        if not TOOL_NAME_RE.match(name):
            ctx.diag.add("name.invalid", rel, f"tool name {name!r} must be 1-64 of [A-Za-z0-9_-]")
            continue
        if name in BUILTIN_TOOLS:
            ctx.diag.add(
                "tool.reserved_name",
                rel,
                f"{name!r} is the name of a built-in tool "
                f"({', '.join(sorted(BUILTIN_TOOLS))}); rename the file",
            )
            continue
        found = ctx.importer.single(path, ToolDefinition, "tool")
        if found is None:
            continue
        ref, tool = found
        if name.lower() in seen:
            ctx.diag.add(
                "tool.duplicate",
                rel,
                f"tool {name!r} clashes with {seen[name.lower()]} (names differing only in "
                "case collide on many file systems and confuse models)",
            )
            continue
        seen[name.lower()] = rel
        if tool.input_problem:
            ctx.diag.add("tool.untyped_input", rel, f"tool {name!r}: {tool.input_problem}")
            continue
        try:
            schema = tool.input_schema()
        except Exception as exc:  # a model whose schema cannot be generated
            ctx.diag.add("import.failed", rel, f"the input schema cannot be generated: {exc}")
            continue
        approval = "predicate" if callable(tool.needs_approval) else bool(tool.needs_approval)
        tools.append(
            ToolSpec(
                name=name,
                description=tool.description,
                input_schema=schema,
                needs_approval=approval,
                execution=tool.execution,
                timeout=tool.timeout,
                env=list(tool.env),
                idempotent=tool.idempotent,
                reconcile=tool.reconcile is not None,
                ref=ref,
            )
        )
    return tools


def discover_mcp(ctx: Ctx) -> list[McpConnectionSpec]:
    out: list[McpConnectionSpec] = []
    folder = ctx.agent_dir / "mcp-connections"
    for path in python_files(ctx, folder, "MCP connection"):
        if not _name_ok(ctx, path, path.stem, "MCP connection"):
            continue
        found = ctx.importer.single(path, McpConnectionDefinition, "MCP connection")
        if found is None:
            continue
        ref, conn = found
        for value in [*conn.headers.values(), *conn.env.values()]:
            for var in env_vars(value):
                if var not in os.environ:
                    ctx.diag.add(
                        "mcp.env_unset",
                        ctx.fs.rel(path),
                        f"MCP connection {path.stem!r} uses ${{{var}}}, which is not set",
                    )
        out.append(
            McpConnectionSpec(
                name=path.stem,
                transport=conn.transport,
                url=conn.url,
                command=list(conn.command) if conn.command else None,
                ref=ref,
                description=conn.description,
                header_names=sorted(conn.headers),
                tools=list(conn.tools) if conn.tools is not None else None,
            )
        )
    return out


def discover_channels(ctx: Ctx) -> list[ChannelSpec]:
    out: list[ChannelSpec] = []
    for path in python_files(ctx, ctx.agent_dir / "channels", "channel"):
        name = path.stem
        if not _name_ok(ctx, path, name, "channel"):
            continue
        found = ctx.importer.single(path, ChannelDefinition, "channel")
        if found is None:
            continue
        ref, channel = found
        base = f"/v1/channels/{name}"
        routes = []
        for r in channel.routes:
            try:
                schema = r.body_schema()
            except Exception as exc:
                ctx.diag.add("import.failed", ref.path, f"route body schema failed: {exc}")
                schema = None
            served = base if r.path == "/" else base + r.path.rstrip("/")
            routes.append(
                RouteSpec(
                    method=r.method, path=served, body_schema=schema, description=r.description
                )
            )
        out.append(
            ChannelSpec(
                name=name,
                kind=channel.kind,
                routes=sorted(routes, key=lambda x: (x.path, x.method)),
                events=sorted(channel.events),
                ref=ref,
                description=channel.description,
            )
        )
    return out


def discover_hooks(ctx: Ctx) -> list[HookSpec]:
    out: list[HookSpec] = []
    for path in python_files(ctx, ctx.agent_dir / "hooks", "hook"):
        if not _name_ok(ctx, path, path.stem, "hook"):
            continue
        found = ctx.importer.single(path, HookDefinition, "hook")
        if found is not None:
            ref, hook = found
            out.append(HookSpec(name=path.stem, events=sorted(hook.events), ref=ref))
    return out


def discover_abs(ctx: Ctx) -> list[AbSpec]:
    candidates: list[Path] = []
    single = ctx.agent_dir / "ab.py"
    if single.is_file() and ctx.fs.inside(single):
        candidates.append(single)
    candidates += python_files(ctx, ctx.agent_dir / "ab", "A/B experiment")
    out: list[AbSpec] = []
    seen: dict[str, str] = {}
    for path in candidates:
        found = ctx.importer.single(path, AbDefinition, "A/B experiment")
        if found is None:
            continue
        ref, ab = found
        name = ab.name or path.stem
        if not _name_ok(ctx, path, name, "A/B experiment"):
            continue
        if not ctx.first_of_name("A/B experiment", name, ref.path, seen):
            continue
        seen[name] = ref.path
        for variant in ab.variants.values():
            ctx.check_model(variant.model, path)
        out.append(
            AbSpec(
                name=name,
                variants=sorted(ab.variants),
                ref=ref,
                weights={k: v.weight for k, v in sorted(ab.variants.items())},
                description=ab.description,
            )
        )
    return out


def discover_ab_config(ctx: Ctx) -> dict[str, Any] | None:
    """`agent/ab.config.py` as camelCase settings (None when absent)."""
    path = ctx.agent_dir / "ab.config.py"
    if not path.is_file() or not ctx.fs.inside(path):
        return None
    found = ctx.importer.single(path, AbConfig, "A/B config")
    if found is None:
        return None
    cfg = found[1]
    return {
        "maxPlaygroundSessions": cfg.max_playground_sessions,
        "durableSamples": cfg.durable_samples,
        "durableSnapshots": cfg.durable_snapshots,
    }


def discover_schedules(ctx: Ctx) -> list[ScheduleSpec]:
    folder = ctx.agent_dir / "schedules"
    if not folder.is_dir():
        return []
    out: dict[str, ScheduleSpec] = {}
    seen: dict[str, str] = {}  # name: where it was defined
    for path in ctx.fs.entries(folder):
        if not path.is_file() or path.suffix not in (".md", ".py") or path.name == "__init__.py":
            if path.name != "__init__.py":
                ctx.ignored(path, "schedules are .md files with cron frontmatter or .py files")
            continue
        sid = path.stem
        if not _name_ok(ctx, path, sid, "schedule"):
            continue
        spec = _markdown_schedule(ctx, path) if path.suffix == ".md" else _py_schedule(ctx, path)
        if spec is None:
            continue
        if not ctx.first_of_name("schedule", sid, spec.source, seen):
            continue
        out[sid] = spec
        seen[sid] = spec.source
    return list(out.values())


def _cron_ok(ctx: Ctx, path: Path, cron: object) -> bool:
    problem = cron_problem(cron)
    if problem:
        ctx.diag.add(
            "schedule.invalid_cron",
            ctx.fs.rel(path),
            f'{problem} (5 fields, UTC, e.g. "0 9 * * 1-5")',
        )
        return False
    # Valid here but refused by EventBridge: a warning, since `agentkit serve` runs it; the
    # AWS build (`agentkit build --target aws`, `sam build`) makes the same finding an error.
    aws_problem = cron_aws_problem(str(cron))
    if aws_problem:
        ctx.diag.add("schedule.cron_not_on_aws", ctx.fs.rel(path), aws_problem)
    return True


def _markdown_schedule(ctx: Ctx, path: Path) -> ScheduleSpec | None:
    doc = ctx.markdown(path)
    if doc is None:
        return None
    warn_unknown_keys(ctx, path, doc.meta, SCHEDULE_KEYS, "schedule")
    cron = doc.meta.get("cron")
    if not _cron_ok(ctx, path, cron):
        return None
    if not doc.body.strip():
        ctx.diag.add(
            "schedule.empty_prompt", ctx.fs.rel(path), "the body (the task prompt) is empty"
        )
        return None
    catch_up = doc.meta.get("catch_up", "once")
    if catch_up not in ("skip", "once", "all"):
        ctx.diag.add(
            "schedule.invalid_catch_up",
            ctx.fs.rel(path),
            f'catch_up must be "skip", "once" or "all", not {catch_up!r}',
        )
        return None
    return ScheduleSpec(
        id=path.stem,
        cron=str(cron).strip(),
        kind="markdown",
        prompt=doc.body,
        source=ctx.fs.rel(path),
        catch_up=catch_up,
    )


def _py_schedule(ctx: Ctx, path: Path) -> ScheduleSpec | None:
    found = ctx.importer.single(path, ScheduleDefinition, "schedule")
    if found is None:
        return None
    ref, schedule = found
    if not _cron_ok(ctx, path, schedule.cron):
        return None
    return ScheduleSpec(
        id=path.stem,
        cron=schedule.cron,
        kind=schedule.kind,
        prompt=schedule.markdown,
        ref=ref,
        source=ref.path,
        catch_up=schedule.catch_up,
    )
