"""The eval runner: each case as real turns through the real engine, in a fresh session.

    runner = EvalRunner(bundle, model="test")
    result = await runner.run(select(bundle.manifest.evals, filter_ids, tags))

A case's trial is: a fresh `CaseHost`, its steps played, the assertions run over the
trajectory (the session's events). An exception in a case is that case's `error`, never the
run's. Trials (`trials=` on the run, the case or the config; "auto" adapts) end a case
`passed`, `flaky` or `failed` (see `trials`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.authoring.evals import EvalDefinition, EvalsConfig, Trials, check_trials
from agentkit.costs import add_costs
from agentkit.evals.case import CaseHost, cost_of, usage_of
from agentkit.evals.steps import play, trajectory_of
from agentkit.evals.trials import TrialSummary, needs_more
from agentkit.events import Event
from agentkit.models import resolve_model
from agentkit.models.base import Model
from agentkit.project.bundle import AgentBundle
from agentkit.project.manifest import EvalSpec

__all__ = [
    "CaseResult",
    "EvalRunner",
    "EvalSetupError",
    "RunResult",
    "TrialResult",
    "select",
]

TrialStatus = Literal["passed", "failed", "error"]
CaseStatus = Literal["passed", "failed", "error", "flaky"]
Progress = Callable[[str, "CaseResult | None"], None]


class EvalSetupError(RuntimeError):
    """The project cannot run evals (error diagnostics, no config, unknown case)."""


def matches(spec: EvalSpec, filter_ids: Sequence[str], tags: Sequence[str]) -> bool:
    """The spec's rule: OR within `filter_ids` and within `tags`, AND across the two.

    A filter entry matches an id exactly, a folder of ids ("approval" matches
    "approval/asks_first") or a glob ("approval/*")."""
    if filter_ids and not any(
        spec.id == f or spec.id.startswith(f.rstrip("/") + "/") or fnmatch.fnmatchcase(spec.id, f)
        for f in filter_ids
    ):
        return False
    return not tags or any(t in spec.tags for t in tags)


def select(
    specs: Iterable[EvalSpec], filter_ids: Sequence[str] = (), tags: Sequence[str] = ()
) -> list[EvalSpec]:
    """The cases a filter selects, in id order."""
    return sorted((s for s in specs if matches(s, filter_ids, tags)), key=lambda s: s.id)


@dataclass(slots=True)
class TrialResult:
    """One run of one case."""

    status: TrialStatus
    failures: list[str]
    error: str | None
    duration_ms: int
    usage: dict[str, int]
    session_id: str | None
    events: tuple[Event, ...] = ()
    cost: float | None = None  # dollars; None when a price was unknown

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "failures": self.failures,
            "error": self.error,
            "durationMs": self.duration_ms,
            "usage": self.usage,
            "cost": self.cost,
            "sessionId": self.session_id,
        }


@dataclass(slots=True)
class CaseResult:
    """A case's outcome over its trials."""

    id: str
    tags: list[str]
    status: CaseStatus
    trials: list[TrialResult] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return next((t.failures for t in self.trials if t.failures), [])

    @property
    def error(self) -> str | None:
        return next((t.error for t in self.trials if t.error), None)

    @property
    def first_failure(self) -> str:
        if self.error:
            return self.error.strip().splitlines()[-1] if self.error.strip() else "error"
        return self.failures[0] if self.failures else ""

    @property
    def duration_ms(self) -> int:
        return sum(t.duration_ms for t in self.trials)

    @property
    def usage(self) -> dict[str, int]:
        total = {"inputTokens": 0, "outputTokens": 0}
        for t in self.trials:
            for k in total:
                total[k] += t.usage.get(k, 0)
        return total

    @property
    def cost(self) -> float | None:
        """Dollars over every trial; None when any trial's cost is unknown."""
        if not self.trials:
            return None
        total: float | None = 0.0
        for t in self.trials:
            total = add_costs(total, t.cost)
        return total

    @property
    def session_id(self) -> str | None:
        return self.trials[-1].session_id if self.trials else None

    @property
    def summary(self) -> TrialSummary:
        return TrialSummary(sum(t.status == "passed" for t in self.trials), len(self.trials))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "tags": self.tags,
            "status": self.status,
            "failures": self.failures,
            "error": self.error,
            "durationMs": self.duration_ms,
            "usage": self.usage,
            "cost": self.cost,  # summed costUsd of the turns; None when a price is unknown
            "sessionId": self.session_id,
        }
        if len(self.trials) > 1:
            s = self.summary
            low, high = s.interval
            out["passRate"] = round(s.rate, 4)
            out["interval"] = [round(low, 4), round(high, 4)]
            out["trials"] = [t.to_dict() for t in self.trials]
        return out


@dataclass(slots=True)
class RunResult:
    """Every selected case's result, in id order."""

    cases: list[CaseResult]
    flaky_fails: bool = False

    @property
    def ok(self) -> bool:
        bad = {"failed", "error"} | ({"flaky"} if self.flaky_fails else set())
        return not any(c.status in bad for c in self.cases)

    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "flaky": 0, "failed": 0, "error": 0}
        for c in self.cases:
            out[c.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "counts": self.counts(), "cases": [c.to_dict() for c in self.cases]}


class EvalRunner:
    """Runs a project's eval cases; see the module docstring."""

    def __init__(
        self,
        bundle: AgentBundle,
        *,
        model: str | None = None,
        model_resolver: Callable[[str | None], Model] | None = None,
        trials: Trials | None = None,
        max_concurrency: int | None = None,
        on_progress: Progress | None = None,
    ) -> None:
        if bundle.manifest.has_errors:
            raise EvalSetupError(
                "the project has error diagnostics:\n"
                + "\n".join(
                    f"  {d.path}: {d.message}"
                    for d in bundle.manifest.diagnostics
                    if d.severity == "error"
                )
            )
        self.bundle = bundle
        self.config: EvalsConfig = bundle.evals_config()
        chosen = model or self.config.model
        if model_resolver is None:
            # A named model runs everything (subagents included); else each its own.
            model_resolver = (lambda _id: resolve_model(chosen)) if chosen else resolve_model
        self.model_resolver = model_resolver
        self.trials = check_trials(trials) if trials is not None else None
        self.max_concurrency = max_concurrency or self.config.max_concurrency
        self.on_progress = on_progress

    def definition(self, case_id: str) -> EvalDefinition:
        found = self.bundle.evaluation(case_id)
        if found is None:
            raise EvalSetupError(f"unknown eval {case_id!r}")
        return found

    async def run(self, specs: Sequence[EvalSpec]) -> RunResult:
        """Run `specs`, at most `max_concurrency` at once; results in the given order."""
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(spec: EvalSpec) -> CaseResult:
            async with gate:
                self._progress("started", None, spec.id)
                result = await self.run_case(spec)
                self._progress("finished", result, spec.id)
                return result

        cases = await asyncio.gather(*(one(s) for s in specs))
        return RunResult(cases=list(cases), flaky_fails=self.config.flaky_fails)

    async def run_case(self, spec: EvalSpec) -> CaseResult:
        """All trials of one case, ending `passed`, `flaky`, `failed` (or `error`)."""
        try:
            case = self.definition(spec.id)
        except Exception as exc:  # an unloadable case is that case's error
            trial = TrialResult("error", [], f"{type(exc).__name__}: {exc}", 0, {}, None)
            return CaseResult(spec.id, list(spec.tags), "error", [trial])
        plan = self.trials or case.trials or self.config.trials
        trials: list[TrialResult] = []
        while True:
            trials.append(await self.run_trial(case))
            passes = sum(t.status == "passed" for t in trials)
            if plan == "auto":
                if not needs_more(passes, len(trials), self.config.max_trials):
                    break
            elif len(trials) >= plan:
                break
        return CaseResult(spec.id, list(spec.tags), _case_status(trials), trials)

    async def run_trial(self, case: EvalDefinition) -> TrialResult:
        """One fresh session through the engine, then the assertions over its events."""
        timeout = case.timeout or self.config.timeout
        started = time.monotonic()
        host = CaseHost(self.bundle, self.model_resolver)
        session_id: str | None = None
        try:
            await host.open()
            async with asyncio.timeout(timeout):
                state = await play(case.script, host, timeout=timeout)
                session_id = state.session_id
                trajectory = await trajectory_of(state)
            failures = case.check(trajectory)
            return TrialResult(
                "failed" if failures else "passed",
                failures,
                None,
                _ms(started),
                usage_of(trajectory.events),
                session_id,
                trajectory.events,
                cost_of(trajectory.events),
            )
        except Exception as exc:
            error = _describe(exc, timeout)
            return TrialResult("error", [], error, _ms(started), {}, session_id)
        finally:
            await host.aclose()

    def _progress(self, what: str, result: CaseResult | None, case_id: str) -> None:
        if self.on_progress is None:
            return
        with contextlib.suppress(Exception):  # a broken progress display never stops a run
            self.on_progress(f"{what}:{case_id}", result)


def _case_status(trials: list[TrialResult]) -> CaseStatus:
    if len(trials) == 1:
        return trials[0].status
    summary = TrialSummary(sum(t.status == "passed" for t in trials), len(trials))
    return summary.verdict


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"timed out after {timeout:g}s"
    frames = traceback.format_exception_only(type(exc), exc)
    return "".join(frames).strip()


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
