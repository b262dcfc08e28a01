"""A pytest plugin (registered by the package): `pytest evals/` runs the eval cases.

Every `*.eval.py` under a project's `evals/` folder becomes one test item named by its case
id; the item runs the case through `EvalRunner` (its trials included) and fails with the
failed assertion messages, or the case's error. `--eval-model provider:model` picks the
model for every case. The project is the folder holding `evals/` (and `agent/`).
"""

# Coverage is below 80%: tests/evals runs the plugin over passing and failing eval files;
# its rarer reports (a file with no case, a setup error, flaky-as-failure, a failure's
# session link) are not exercised by a test of their own.

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentkit.evals.runner import CaseResult, EvalRunner
    from agentkit.project.manifest import EvalSpec

EVAL_SUFFIX = ".eval.py"
_RUNNERS = pytest.StashKey[dict[Path, "EvalRunner"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentkit", "agentkit evals")
    group.addoption(
        "--eval-model", default=None, help="a provider:model id for every agentkit eval case"
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not file_path.name.endswith(EVAL_SUFFIX):
        return None
    if _project_of(file_path) is None:
        return None
    file: EvalFile = EvalFile.from_parent(parent, path=file_path)
    return file


def _project_of(path: Path) -> Path | None:
    """The project folder: the parent of the nearest `evals/` folder above `path`."""
    for folder in path.parents:
        if folder.name == "evals":
            return folder.parent
    return None


class EvalFailed(Exception):
    """An eval case did not pass."""


class EvalFile(pytest.File):
    """One `*.eval.py` file: one case."""

    def collect(self) -> list[pytest.Item]:
        project = _project_of(self.path)
        assert project is not None
        runner = self._runner(project)
        rel = self.path.relative_to(project / "evals").as_posix()
        case_id = rel[: -len(EVAL_SUFFIX)]
        spec = next((s for s in runner.bundle.manifest.evals if s.id == case_id), None)
        if spec is None:
            raise self.CollectError(f"{rel} defines no eval case (see agentkit validate)")
        item: EvalItem = EvalItem.from_parent(self, name=case_id, runner=runner, spec=spec)
        for tag in spec.tags:
            item.add_marker(pytest.mark.eval_tag(tag))
        return [item]

    def _runner(self, project: Path) -> EvalRunner:
        from agentkit.evals.runner import EvalRunner, EvalSetupError
        from agentkit.project.bundle import AgentBundle

        runners = self.config.stash.setdefault(_RUNNERS, {})
        key = project.resolve()
        if key not in runners:
            bundle = AgentBundle.discover(project)
            try:
                runners[key] = EvalRunner(bundle, model=self.config.getoption("--eval-model"))
            except EvalSetupError as exc:
                raise self.CollectError(str(exc)) from None
        return runners[key]


class EvalItem(pytest.Item):
    """One eval case, run through the engine when pytest runs it."""

    def __init__(self, *, runner: EvalRunner, spec: EvalSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.runner = runner
        self.spec = spec

    def runtest(self) -> None:
        result: CaseResult = asyncio.run(self.runner.run_case(self.spec))
        bad = {"failed", "error"} | ({"flaky"} if self.runner.config.flaky_fails else set())
        if result.status in bad:
            lines = [f"eval {self.spec.id} {result.status}"]
            if result.error:
                lines.append(result.error)
            lines.extend(f"  - {f}" for f in result.failures)
            if result.session_id:
                lines.append(f"session: {result.session_id}")
            raise EvalFailed("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, EvalFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"eval: {self.spec.id}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "eval_tag(name): a tag of an agentkit eval case")
