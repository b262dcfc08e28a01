"""The loop breaker never stops a healthy long session: a few of the examples' evals, each
continued with follow-ups on the test model (`bench/bench_loop_guard.py` runs 200)."""

from __future__ import annotations

from pathlib import Path

from agentkit.project.bundle import AgentBundle
from bench.healthy_sessions import Case, example_cases, measure, run_long

from .conftest import FILES, write_project

LOOPING_AGENT = """
from agentkit import define_agent
from agentkit.models import ScriptedModel, Step
from agentkit.models.scripted import call

# Asks for the same call on every step, forever.
model = ScriptedModel(
    [Step.tool_calls(call("get_weather", {"city": "Paris"})) for _ in range(40)],
    model_id="scripted:looping",
)
agent = define_agent(model=model, max_steps=30)
"""


async def test_long_example_sessions_are_never_stopped_as_loops() -> None:
    # One case of each example agent. `units` is left to the bench: its MCP server takes
    # seconds to come up in every case, and what it adds here is waiting, not coverage.
    by_example: dict[str, Case] = {}
    for case in example_cases():
        if case.example != "units":
            by_example.setdefault(case.example, case)
    cases = list(by_example.values())

    tally = await measure(len(cases), follow_ups=6, cases=cases)

    assert tally.sessions == len(cases) >= 3
    assert tally.turns >= tally.sessions * 7  # the script's turns and the follow-ups ran
    assert tally.stopped == []


async def test_a_looping_session_is_counted(tmp_path: Path) -> None:
    # The count can fail: a model that loops, handed over from its agent folder, is seen.
    files = {**FILES, "agent/agent.py": LOOPING_AGENT}
    files["evals/loops.eval.py"] = (
        "from agentkit.evals import define_eval\n\ncase = define_eval(message='Paris?')\n"
    )
    files["evals/evals.config.py"] = (
        "from agentkit import define_evals_config\n\n"
        "config = define_evals_config(max_concurrency=1)\n"
    )
    bundle = AgentBundle.discover(write_project(tmp_path / "looping", files))
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    _, stops = await run_long(Case("looping", "loops", bundle), follow_ups=0)
    assert len(stops) == 1 and "repeated_call" in stops[0]
