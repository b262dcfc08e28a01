"""Our promises under `--emulate-aws --chaos duplicate=0.5,timeout=0.2,throttle=0.1`, for a
fixed set of seeds: sessions settle with gap-free indexes, no tool side effect runs twice,
hooks see every event at least once, reminders fire once per occurrence. The long version
is bench/bench_emulated_chaos.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulator.chaos_driver import run_sessions
from tests.emulator.helpers import emulated, stand_in, write_agent

pytestmark = pytest.mark.timeout(400)

SEEDS = (7, 23)
SESSIONS = 4


@pytest.mark.parametrize("seed", SEEDS)
def test_promises_hold_under_chaos(tmp_path: Path, seed: int) -> None:
    project = write_agent(tmp_path / "project")
    spec = f"duplicate=0.5,timeout=0.2,throttle=0.1,seed={seed}"
    with stand_in() as standin, emulated(project, standin, "--chaos", spec) as server:
        outcome = run_sessions(server, standin, SESSIONS, timeout=120)
        assert outcome.problems() == [], (outcome, server.chaos_lines()[-20:])
        assert outcome.sessions == SESSIONS
        # The faults were really injected, each logged with its seed.
        assert server.chaos_lines()
        assert all(f"seed={seed}" in line for line in server.chaos_lines())
