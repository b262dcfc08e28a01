"""The runner: real turns through the engine, per-case results, errors, steps and the clock."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from agentkit.evals.runner import EvalRunner, EvalSetupError, select
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.project.bundle import AgentBundle
from tests.evals.conftest import case, write_project


def runner_for(root: Path, **kw: Any) -> EvalRunner:
    return EvalRunner(AgentBundle.discover(root), **kw)


async def run_all(runner: EvalRunner) -> dict[str, Any]:
    result = await runner.run(select(runner.bundle.manifest.evals))
    return {c.id: c for c in result.cases}


async def test_a_passing_and_a_failing_case_each_report_what_happened(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "weather/paris.eval.py": case(
                """define_eval(
                    message="What's the weather in Paris?",
                    assertions=[succeeded(), called_tool("get_weather", city="Paris")],
                    tags=["smoke"],
                )"""
            ),
            "wrong.eval.py": case(
                """define_eval(
                    message="What's the weather in Oslo?",
                    assertions=[called_tool("get_weather", city="Rome"), reply_contains("snow")],
                )"""
            ),
        },
    )
    runner = runner_for(root)
    cases = await run_all(runner)
    ok, bad = cases["weather/paris"], cases["wrong"]
    assert ok.status == "passed" and ok.failures == [] and ok.tags == ["smoke"]
    assert ok.session_id and ok.session_id.startswith("ses_")
    assert ok.usage["inputTokens"] > 0 and ok.usage["outputTokens"] > 0
    assert ok.duration_ms >= 0
    # The trace is the session's events: the real engine ran the real tool.
    types = [e.type for e in ok.trials[0].events]
    assert types[:4] == ["session.started", "message.received", "agent.bound", "turn.started"]
    assert "action.result" in types and types[-2:] == ["turn.completed", "session.waiting"]
    assert bad.status == "failed"
    assert len(bad.failures) == 2
    assert "expected a call to get_weather {'city': 'Rome'}" in bad.failures[0]
    assert "snow" in bad.failures[1]


async def test_an_exception_in_a_case_is_that_case_error_not_the_run(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "boom.eval.py": case("""define_eval(message="hi", assertions=[lambda t: 1 / 0])"""),
            "nothing_parked.eval.py": case(
                """define_eval(steps=[say("What's the weather in Rome?"), approve()])"""
            ),
            "fine.eval.py": case("""define_eval(message="hi", assertions=[succeeded()])"""),
        },
    )
    cases = await run_all(runner_for(root))
    assert cases["boom"].status == "error"
    assert "ZeroDivisionError" in (cases["boom"].error or "")
    assert cases["nothing_parked"].status == "error"
    assert "no a parked call to decide" in (cases["nothing_parked"].error or "")
    assert cases["fine"].status == "passed"


async def test_a_case_that_outlives_its_timeout_is_an_error(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {"slow.eval.py": case("""define_eval(message="hi", timeout=0.5)""")},
    )
    # A model that never answers within the case's timeout (cancellation ends it).
    model = ScriptedModel([Step.delay(60)])
    result = await runner_for(root, model_resolver=lambda _id: model).run(
        select(AgentBundle.discover(root).manifest.evals)
    )
    [only] = result.cases
    assert only.status == "error" and "timed out" in (only.error or "")
    assert not result.ok


async def test_max_concurrency_bounds_cases_running_at_once(tmp_path: Path) -> None:
    evals = {f"c{i}.eval.py": case('define_eval(message="hi")') for i in range(5)}
    root = write_project(tmp_path, evals, config="max_concurrency=2")
    running = peak = 0
    gate = asyncio.Event()

    class Gated(ScriptedModel):
        async def stream(self, request: Any) -> Any:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            if peak >= 2:
                gate.set()
            await gate.wait()  # the first case waits until a second one is running
            running -= 1
            async for chunk in super().stream(request):
                yield chunk

    runner = runner_for(root, model_resolver=lambda _id: Gated([Step.text("ok")]))
    assert runner.max_concurrency == 2
    result = await runner.run(select(runner.bundle.manifest.evals))
    assert [c.status for c in result.cases] == ["passed"] * 5
    assert peak == 2


def test_evals_without_a_config_are_an_error_diagnostic(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"a.eval.py": case('define_eval(message="hi")')}, config=None)
    bundle = AgentBundle.discover(root)
    [diag] = [d for d in bundle.manifest.diagnostics if d.code == "evals.config_missing"]
    assert diag.severity == "error"
    with pytest.raises(EvalSetupError, match=r"evals/evals\.config\.py"):
        EvalRunner(bundle)


async def test_follow_up_messages_and_approval_decisions(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "approve.eval.py": case(
                """define_eval(
                    steps=[say("Please wipe the notes."), approve("wipe_notes")],
                    assertions=[
                        approval_requested("wipe_notes"),
                        called_tool("wipe_notes"),
                        reply_contains("wiped"),
                        turns_completed(1),
                    ],
                )"""
            ),
            "deny.eval.py": case(
                """define_eval(
                    steps=[say("Please wipe the notes."), deny(), "Weather in Oslo?"],
                    assertions=[turns_completed(2), called_tool("get_weather", city="Oslo")],
                )"""
            ),
        },
    )
    cases = await run_all(runner_for(root))
    assert cases["approve"].status == "passed", cases["approve"].failures or cases["approve"].error
    assert cases["deny"].status == "passed", cases["deny"].failures or cases["deny"].error
    results = [
        e.data for e in cases["deny"].trials[0].events if e.type == "action.approval_resolved"
    ]
    assert [r.get("decision") for r in results] == ["deny"]


async def test_advancing_the_clock_fires_a_reminder_through_the_production_path(
    tmp_path: Path,
) -> None:
    root = write_project(
        tmp_path,
        {
            "remind.eval.py": case(
                """define_eval(
                    steps=[
                        say("Watch CI."),
                        call_tool("remind_me", delay="2h", prompt="Check CI again."),
                        advance("119m"),
                    ],
                    assertions=[message_received(source="reminder")],
                )"""
            ),
            "remind_due.eval.py": case(
                """define_eval(
                    steps=[
                        say("Watch CI."),
                        call_tool("remind_me", delay="2h", prompt="Check CI again."),
                        advance("2h"),
                    ],
                    assertions=[
                        message_received(source="reminder", contains="Check CI again."),
                        turns_completed(2),
                    ],
                )"""
            ),
        },
        remind_me=True,
    )
    cases = await run_all(runner_for(root))
    # One minute short: nothing fires (the assertion fails); at 2h the reminder's follow-up
    # arrives in the same session and its turn runs to the end.
    assert cases["remind"].status == "failed"
    assert "no message received" in cases["remind"].failures[0]
    assert cases["remind_due"].status == "passed", cases["remind_due"].failures
    events = cases["remind_due"].trials[0].events
    fired = [e for e in events if e.type == "message.received" and e.data["source"] == "reminder"]
    assert len(fired) == 1 and fired[0].data["message"] == "Check CI again."


async def test_advancing_the_clock_runs_due_schedules_as_task_sessions(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "cron.eval.py": case(
                """define_eval(
                    steps=[say("hi"), advance("1h")],
                    assertions=[lambda t: len(t.others) == 2 or f"others: {len(t.others)}"],
                )"""
            )
        },
        extra={"agent/schedules/sweep.md": '---\ncron: "*/30 * * * *"\n---\n\nSweep.\n'},
    )
    cases = await run_all(runner_for(root))
    assert cases["cron"].status == "passed", cases["cron"].failures or cases["cron"].error


async def test_an_interrupt_cuts_the_running_turn_and_the_follow_up_is_answered(
    tmp_path: Path,
) -> None:
    root = write_project(
        tmp_path,
        {
            "interrupt.eval.py": case(
                """define_eval(
                    steps=[say("Think for a long time."), interrupt("Never mind.")],
                    assertions=[reply_contains("second answer"), turns_completed(1)],
                )"""
            )
        },
    )
    # The first step would take a minute: only the interrupt can end it early.
    model = ScriptedModel([Step.delay(60), Step.text("second answer")])
    runner = runner_for(root, model_resolver=lambda _id: model)
    [result] = (await runner.run(select(runner.bundle.manifest.evals))).cases
    assert result.status == "passed", result.failures or result.error
    ends = [(e.type, e.data.get("error")) for e in result.trials[0].events if "turn." in e.type]
    assert ends == [
        ("turn.started", None),
        ("turn.failed", "turn interrupted"),
        ("turn.started", None),
        ("turn.completed", None),
    ]


async def test_a_stream_cut_mid_turn_resumes_with_no_gap_and_no_duplicate(
    tmp_path: Path,
) -> None:
    root = write_project(
        tmp_path,
        {
            "cut.eval.py": case(
                """define_eval(
                    steps=[
                        say("Weather in Lyon?", cut_after=3),
                        say("And in Nice?", cut_after=5),
                    ],
                    assertions=[stream_intact(), turns_completed(2)],
                )"""
            )
        },
    )
    [result] = (await runner_for(root).run(select(AgentBundle.discover(root).manifest.evals))).cases
    assert result.status == "passed", result.failures
    events = result.trials[0].events
    assert len(events) > 10


async def test_adaptive_trials_on_a_model_that_passes_half_the_time_end_flaky(
    tmp_path: Path,
) -> None:
    root = write_project(
        tmp_path,
        {"coin.eval.py": case('define_eval(message="flip", assertions=[reply_contains("heads")])')},
        config="max_concurrency=1, max_trials=8",
    )
    flips = itertools.cycle(["heads", "tails"])
    runner = runner_for(
        root, trials="auto", model_resolver=lambda _id: ScriptedModel([Step.text(next(flips))])
    )
    [result] = (await runner.run(select(runner.bundle.manifest.evals))).cases
    assert result.status == "flaky"
    assert result.summary.trials == 8 and result.summary.passes == 4
    low, high = result.summary.interval
    assert low < 0.5 < high
    assert result.to_dict()["passRate"] == 0.5


async def test_adaptive_trials_stop_early_on_a_stable_case(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"ok.eval.py": case('define_eval(message="hi")')})
    runner = runner_for(root, trials="auto")
    [result] = (await runner.run(select(runner.bundle.manifest.evals))).cases
    assert result.status == "passed" and result.summary.trials == 2


async def test_trials_on_a_case_and_flaky_fails_from_the_config(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "coin.eval.py": case(
                'define_eval(message="flip", trials=4, assertions=[reply_contains("heads")])'
            )
        },
        config="max_concurrency=1, flaky_fails=True",
    )
    flips = itertools.cycle(["heads", "tails"])
    runner = runner_for(root, model_resolver=lambda _id: ScriptedModel([Step.text(next(flips))]))
    result = await runner.run(select(runner.bundle.manifest.evals))
    assert [c.status for c in result.cases] == ["flaky"]
    assert result.cases[0].summary.trials == 4
    assert not result.ok  # the config says a flaky case fails the run


def test_filters_are_or_within_a_field_and_and_across_fields(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "a.eval.py": case('define_eval(message="x", tags=["smoke"])'),
            "b.eval.py": case('define_eval(message="x", tags=["slow"])'),
            "group/c.eval.py": case('define_eval(message="x", tags=["smoke", "slow"])'),
            "group/d.eval.py": case('define_eval(message="x")'),
        },
    )
    specs = AgentBundle.discover(root).manifest.evals

    def ids(filter_ids: list[str], tags: list[str]) -> list[str]:
        return [s.id for s in select(specs, filter_ids, tags)]

    assert ids([], []) == ["a", "b", "group/c", "group/d"]
    assert ids(["a", "b"], []) == ["a", "b"]  # OR within filters
    assert ids([], ["smoke", "slow"]) == ["a", "b", "group/c"]  # OR within tags
    assert ids(["group"], []) == ["group/c", "group/d"]  # a folder of ids
    assert ids(["group/*"], ["slow"]) == ["group/c"]  # AND across the two
    assert ids(["a", "group/d"], ["slow"]) == []
    assert ids(["nope"], []) == []


async def test_a_run_names_the_model_for_every_case(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"a.eval.py": case('define_eval(message="hi")')})
    runner = runner_for(root, model="test")
    [result] = (await runner.run(select(runner.bundle.manifest.evals))).cases
    started = [e for e in result.trials[0].events if e.type == "turn.started"]
    assert started[0].data["model"] == "test"
