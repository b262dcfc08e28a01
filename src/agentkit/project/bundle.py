"""`AgentBundle`: one agent project, discovered from its folder or loaded from a build.

    bundle = AgentBundle.discover(Path("examples/weather"))   # walks agent/
    bundle = AgentBundle.load_built(Path("build/weather"))     # reads manifest.json only

Either way `bundle.manifest` describes the surface and definitions (tools, hooks,
schedules, ...) are imported lazily, once, the first time they are asked for.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from agentkit.errors import ProjectError
from agentkit.project.loader import ModuleScope
from agentkit.project.manifest import CodeRef, Diagnostic, Manifest

# The definition classes are imported where a definition is asked for: a deployed API
# function loads the manifest and answers most requests without any of them.
if TYPE_CHECKING:
    from agentkit.authoring.ab import AbDefinition
    from agentkit.authoring.agent import AgentDefinition
    from agentkit.authoring.channels import ChannelDefinition
    from agentkit.authoring.evals import EvalDefinition, EvalsConfig
    from agentkit.authoring.hooks import HookDefinition
    from agentkit.authoring.mcp import McpConnectionDefinition
    from agentkit.authoring.schedules import ScheduleDefinition
    from agentkit.authoring.tools import ToolDefinition

MANIFEST_FILE = "manifest.json"
T = TypeVar("T")


class AgentBundle:
    """A project's manifest plus lazy access to the code it references."""

    def __init__(self, manifest: Manifest, root: Path, *, scope: ModuleScope | None = None):
        self.manifest = manifest
        self.root = root
        self._scope = scope or ModuleScope(root)
        self._cache: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def discover(cls, project_dir: Path) -> AgentBundle:
        """Walk `project_dir/agent` (and `evals/`). User mistakes become diagnostics."""
        from agentkit.project.discovery import discover_project

        root = Path(project_dir).resolve()
        manifest, scope = discover_project(root)
        return cls(manifest, root, scope=scope)

    @classmethod
    def load_built(cls, build_dir: Path) -> AgentBundle:
        """Read `build_dir/manifest.json` as written by `agentkit build`; no folder walk."""
        root = Path(build_dir).resolve()
        path = root / MANIFEST_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ProjectError(f"no readable {MANIFEST_FILE} in {build_dir}: {exc}") from exc
        try:
            manifest = Manifest.model_validate_json(text)
        except ValidationError as exc:
            raise ProjectError(
                f"{MANIFEST_FILE} in {build_dir} is not a valid manifest: {exc}"
            ) from None
        return cls(manifest, root)

    # -- facts --------------------------------------------------------------------------

    @property
    def slug(self) -> str:
        return self.manifest.agent.slug

    @property
    def name(self) -> str:
        return self.manifest.agent.name

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.manifest.diagnostics)

    @property
    def sandbox_dir(self) -> Path | None:
        """`agent/sandbox/workspace`, seeded into each session's workspace, if present."""
        path = self.root / "agent" / "sandbox" / "workspace"
        return path if path.is_dir() else None

    def require_valid(self) -> None:
        """Raise `ProjectError` (carrying the diagnostics) when any has error severity."""
        errors = [d for d in self.manifest.diagnostics if d.severity == "error"]
        if errors:
            lines = "\n".join(f"  {d.path}: [{d.code}] {d.message}" for d in errors)
            raise ProjectError(f"the agent has {len(errors)} error(s):\n{lines}", errors)

    # -- lazy definitions ---------------------------------------------------------------

    def definition(self, ref: CodeRef) -> Any:
        """Import the module `ref` points at (once) and return the referenced value.

        Import failures propagate: on a built bundle the code was validated at build time,
        so a failure here is a deployment fault, not a user diagnostic.
        """
        key = (ref.module, ref.attribute)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        module = self._scope.load_file(ref.module, self.root / ref.path)
        value = getattr(module, ref.attribute)
        with self._lock:
            self._cache.setdefault(key, value)
            return self._cache[key]

    def _typed(self, ref: CodeRef | None, kind: type[T]) -> T | None:
        if ref is None:
            return None
        value = self.definition(ref)
        return value if isinstance(value, kind) else None

    def agent_definition(self) -> AgentDefinition | None:
        """The root `agent/agent.py` definition, if the project has one."""
        from agentkit.authoring.agent import AgentDefinition

        return self._typed(self.manifest.agent.ref, AgentDefinition)

    def tool(self, name: str) -> ToolDefinition | None:
        """A user tool by name (None for unknown names and built-in tools)."""
        from agentkit.authoring.tools import ToolDefinition

        spec = self.manifest.tool(name)
        return self._typed(spec.ref if spec else None, ToolDefinition)

    def hook(self, name: str) -> HookDefinition | None:
        from agentkit.authoring.hooks import HookDefinition

        spec = next((h for h in self.manifest.hooks if h.name == name), None)
        return self._typed(spec.ref if spec else None, HookDefinition)

    def schedule(self, schedule_id: str) -> ScheduleDefinition | None:
        """A schedule by id; markdown schedules are rebuilt from the manifest (no import)."""
        from agentkit.authoring.schedules import ScheduleDefinition, define_schedule

        spec = next((s for s in self.manifest.schedules if s.id == schedule_id), None)
        if spec is None:
            return None
        if spec.kind == "markdown":
            return define_schedule(cron=spec.cron, markdown=spec.prompt or "")
        return self._typed(spec.ref, ScheduleDefinition)

    def channel(self, name: str) -> ChannelDefinition | None:
        from agentkit.authoring.channels import ChannelDefinition

        spec = next((c for c in self.manifest.channels if c.name == name), None)
        return self._typed(spec.ref if spec else None, ChannelDefinition)

    def ab(self, name: str) -> AbDefinition | None:
        from agentkit.authoring.ab import AbDefinition

        spec = next((a for a in self.manifest.abs if a.name == name), None)
        return self._typed(spec.ref if spec else None, AbDefinition)

    def mcp_connection(self, name: str) -> McpConnectionDefinition | None:
        from agentkit.authoring.mcp import McpConnectionDefinition

        spec = next((m for m in self.manifest.mcp_connections if m.name == name), None)
        return self._typed(spec.ref if spec else None, McpConnectionDefinition)

    def evaluation(self, eval_id: str) -> EvalDefinition | None:
        from agentkit.authoring.evals import EvalDefinition

        spec = next((e for e in self.manifest.evals if e.id == eval_id), None)
        return self._typed(spec.ref if spec else None, EvalDefinition)

    def evals_config(self) -> EvalsConfig:
        """The `evals/evals.config.py` settings (defaults when the file is absent)."""
        from agentkit.authoring.evals import EvalsConfig

        raw = self.manifest.evals_config or {}
        return EvalsConfig(
            max_concurrency=int(raw.get("maxConcurrency", 4)),
            timeout=float(raw.get("timeout", 300.0)),
            model=raw.get("model"),
            trials=raw.get("trials", 1),
            max_trials=int(raw.get("maxTrials", 10)),
            flaky_fails=bool(raw.get("flakyFails", False)),
            max_playground_runs=int(raw.get("maxPlaygroundRuns", 20)),
            persist_runs=bool(raw.get("persistRuns", False)),
        )
