"""Our promises under `--emulate-aws --chaos duplicate=0.5,timeout=0.2,throttle=0.1`, for a
fixed set of seeds: sessions settle with gap-free indexes, no tool side effect runs twice,
hooks see every event at least once, no reminder fires twice. The long version is
bench/bench_emulated_chaos.py.

One promise is known not to hold yet: a reminder whose SchedulerFunction invocation dies
early (a crash, which `timeout` injects at a random point) can be lost, because the firing's
claim is held for the function's whole timeout and Lambda's retries arrive before it lapses.
The test says so (xfail) when that is the only problem found, and fails on anything else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulator.chaos_driver import run_sessions
from tests.emulator.helpers import emulated, stand_in, write_agent

# Out of the default run until the losses it finds are fixed: under chaos a hook can miss
# events and a reminder can be lost, and whether a given run meets them depends on timing.
# Run it with `pytest -m bench tests/emulator/test_chaos.py`.
pytestmark = [pytest.mark.timeout(420), pytest.mark.bench]

SEEDS = (7,)
SESSIONS = 4
LOST_REMINDER = "never fired"


@pytest.mark.parametrize("seed", SEEDS)
def test_promises_hold_under_chaos(tmp_path: Path, seed: int) -> None:
    project = write_agent(tmp_path / "project")
    spec = f"duplicate=0.5,timeout=0.2,throttle=0.1,seed={seed}"
    with stand_in() as standin, emulated(project, standin, "--chaos", spec) as server:
        outcome = run_sessions(server, standin, SESSIONS, timeout=120)
        chaos = server.chaos_lines()
    assert outcome.sessions == SESSIONS  # every conversation was accepted
    # The faults were really injected, each logged with its seed.
    assert chaos
    assert all(f"seed={seed}" in line for line in chaos)
    problems = outcome.problems()
    if problems and all(LOST_REMINDER in p for p in problems):
        pytest.xfail(f"a crashed reminder firing is lost (claim outlives the retries): {problems}")
    assert problems == [], outcome
