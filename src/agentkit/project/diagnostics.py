"""Diagnostic codes and the collector discovery reports into.

Every code is listed here with its severity so the docs table, the CLI and the tests
agree. Error-severity diagnostics block `serve` and `build`; warnings only print.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentkit.project.manifest import Diagnostic, Severity

CODES: dict[str, tuple[Severity, str]] = {
    "project.no_agent_dir": ("error", "the project has no agent/ folder"),
    "slug.invalid": ("error", "the project folder name cannot be used as a URL slug"),
    "instructions.missing": ("error", "the root agent has no instructions"),
    "instructions.conflict": ("error", "more than one instructions form exists"),
    "instructions.empty": ("warning", "the instructions are empty"),
    "definition.none": ("error", "a file in a discovery folder defines nothing"),
    "definition.multiple": ("error", "a file defines more than one definition"),
    "import.failed": ("error", "a user file raised while being imported"),
    "file.not_utf8": ("error", "a text file is not valid UTF-8"),
    "file.unreadable": ("error", "a file could not be read"),
    "file.too_large": ("error", "a text file read into the manifest is over 1 MiB"),
    "file.ignored": ("warning", "a file in a discovery folder has an unexpected type"),
    "path.outside_project": ("warning", "a symlink points outside the project; skipped"),
    "frontmatter.malformed": ("error", "a markdown frontmatter block is invalid"),
    "model.invalid": ("error", "a model id is not provider:model with a known provider"),
    "name.invalid": ("error", "a name taken from a file name is not allowed"),
    "name.duplicate": ("error", "two files resolve to the same name"),
    "tool.duplicate": ("error", "two tools share a name"),
    "tool.untyped_input": ("error", "a tool's input parameter is not typed with a model"),
    "mcp.env_unset": ("warning", "an MCP connection refers to an unset ${VAR}"),
    "mcp.lock_invalid": ("error", "agent/mcp.lock cannot be read"),
    "mcp.lock_drift": ("warning", "an MCP server's tools differ from agent/mcp.lock"),
    "tool.reserved_name": ("error", "a tool takes the name of a built-in tool"),
    "skill.missing_description": ("error", "a skill directory's SKILL.md has no description"),
    "skill.missing_file": ("error", "a skill directory has no SKILL.md"),
    "schedule.invalid_cron": ("error", "a schedule's cron expression is invalid"),
    "schedule.cron_not_on_aws": ("warning", "a schedule's cron runs locally but not on AWS"),
    "schedule.empty_prompt": ("error", "a markdown schedule has no prompt"),
    "schedule.invalid_catch_up": ("error", "a schedule's catch_up is not skip, once or all"),
    "subagent.missing_description": ("error", "a subagent has no description"),
    "subagent.missing_instructions": ("error", "a subagent has no instructions"),
    "subagent.ignored_folder": ("warning", "a subagent folder that is ignored"),
    "subagent.nested": ("error", "subagents cannot have subagents"),
    "agent.options_not_json": ("error", "define_agent options must be JSON values"),
    "schedule.unknown_key": ("warning", "a schedule's frontmatter has a key nothing reads"),
    "skill.unknown_key": ("warning", "a skill's frontmatter has a key nothing reads"),
    "agent.unknown_option": ("error", "define_agent was given a keyword it does not know"),
    "agent.option_no_effect": ("warning", "a define_agent keyword that does nothing here"),
    "field.unknown_keyword": ("warning", "a pydantic Field(...) keyword pydantic does not know"),
    "evals.config_missing": ("error", "evals exist but evals/evals.config.py does not"),
}


@dataclass
class Collector:
    """Diagnostics gathered during one discovery."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, code: str, path: str, message: str, severity: Severity | None = None) -> None:
        default, _ = CODES[code]
        self.items.append(
            Diagnostic(severity=severity or default, code=code, path=path, message=message)
        )

    def sorted(self) -> list[Diagnostic]:
        order = {"error": 0, "warning": 1, "info": 2}
        return sorted(self.items, key=lambda d: (order[d.severity], d.path, d.code, d.message))
