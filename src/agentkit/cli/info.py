"""`agentkit info`: the discovered surface, readable or as the manifest JSON."""

from __future__ import annotations

import argparse
import io
import sys
from typing import TYPE_CHECKING, Any, TextIO

from agentkit.cli._shared import add_dir_argument, discover_manifest, print_diagnostics, summary
from agentkit.cli._style import fancy, print_table, say

if TYPE_CHECKING:  # the project stack is imported when the command runs
    from agentkit.project.manifest import Manifest

EXAMPLES = """\
agentkit info --dir .
agentkit info --dir . --json | jq '.tools[].name'
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "info",
        help="show what agentkit discovered in an agent folder",
        description=(
            "Discover the agent in --dir and print its surface: model, instructions, tools, "
            "skills, subagents, MCP connections, channels and routes, schedules, hooks, "
            "A/B experiments, evals and diagnostics. --json prints the manifest (the shape "
            "GET /v1/info serves)."
        ),
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    manifest = discover_manifest(args)
    if manifest is None:
        return 2
    if args.json:
        sys.stdout.write(manifest.to_json())
    elif fancy(sys.stdout):
        _print_fancy(manifest, sys.stdout)
    else:
        sys.stdout.write(render(manifest))
    return 0


def _print_fancy(m: Manifest, out: TextIO) -> None:
    """The same facts for a terminal: tools and schedules as tables, titles in bold."""
    rest = render(m.model_copy(update={"tools": [], "schedules": [], "diagnostics": []}))
    head, _, tail = rest.partition("\n")
    say(head, out, word=m.agent.name)
    for line in tail.splitlines():
        if line.startswith("diagnostics"):
            continue
        title = not line.startswith(" ") and line.endswith(")")
        say(line, out, word=line.split(" (")[0] if title else None)
    if m.tools:
        rows = [
            [
                t.name,
                t.execution,
                "predicate"
                if t.needs_approval == "predicate"
                else "yes"
                if t.needs_approval
                else "",
                t.description,
            ]
            for t in m.tools
        ]
        print_table(["tool", "runs on", "approval", "description"], rows, out)
    if m.schedules:
        rows = [[s.id, s.cron, s.kind] for s in m.schedules]
        print_table(["schedule", "cron (UTC)", "kind"], rows, out)
    print_diagnostics(m.diagnostics, out)
    say(f"diagnostics {summary(m.diagnostics)}", out)


def _section(title: str, rows: list[str], count: int | None = None) -> list[str]:
    if not rows:
        return []
    return [f"{title} ({len(rows) if count is None else count})", *(f"  {r}" for r in rows)]


def render(m: Manifest) -> str:
    """A human-readable summary of a manifest."""
    a = m.agent
    lines = [
        f"agent       {a.name}  (slug {a.slug})",
        f"model       {a.model or 'host default'}  max_steps={a.max_steps}",
        f"instructions {len(m.instructions.splitlines())} line(s)",
    ]
    tools = []
    for t in m.tools:
        flags: list[str] = [t.execution]
        if t.needs_approval:
            flags.append(
                "needs approval" + (" (predicate)" if t.needs_approval == "predicate" else "")
            )
        tools.append(f"{t.name}  [{', '.join(flags)}]  {t.description}")
    lines += _section("tools", tools)
    lines += _section(
        "skills",
        [
            f"{s.name}  {s.description}" + (f"  (+{len(s.files)} files)" if s.files else "")
            for s in m.skills
        ],
    )
    lines += _section(
        "subagents",
        [f"{s.name}  model={s.model or 'inherit'}  {s.description}" for s in m.subagents],
    )
    pinned = (m.mcp_lock or {}).get("connections", {})
    lines += _section(
        "mcp connections",
        [
            f"{c.name}  {c.transport}  {c.url or ' '.join(c.command or [])}"
            + (f"\n    pinned: {', '.join(sorted(pinned[c.name]))}" if c.name in pinned else "")
            for c in m.mcp_connections
        ],
    )
    channels = []
    for c in m.channels:
        channels.append(
            f"{c.name}  ({c.kind})" + (f"  events: {', '.join(c.events)}" if c.events else "")
        )
        channels += [f"  {r.method:<6} {r.path}" for r in c.routes]
    lines += _section("channels", channels, len(m.channels))
    lines += _section("schedules", [f"{s.id}  '{s.cron}'  {s.kind}" for s in m.schedules])
    lines += _section("hooks", [f"{h.name}  {', '.join(h.events)}" for h in m.hooks])
    lines += _section(
        "a/b experiments",
        [
            f"{x.name}  " + ", ".join(f"{v}:{x.weights.get(v, 1.0):g}" for v in x.variants)
            for x in m.abs
        ],
    )
    lines += _section(
        "evals", [f"{e.id}" + (f"  [{', '.join(e.tags)}]" if e.tags else "") for e in m.evals]
    )
    if m.workspace_files:
        lines.append(f"workspace   {len(m.workspace_files)} file(s) in agent/sandbox/workspace")
    lines.append(f"diagnostics {summary(m.diagnostics)}")
    out = "\n".join(lines) + "\n"
    if m.diagnostics:
        buf = io.StringIO()
        print_diagnostics(m.diagnostics, buf)
        out += buf.getvalue()
    return out
