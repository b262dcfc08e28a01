"""Our promises under fault injection, at length: `agentkit serve --emulate-aws --chaos
duplicate=0.5,timeout=0.2,throttle=0.1` for five seeds, 200 sessions each (a tool call
that needs approval, then a reminder), through the real Lambda handlers over HTTP.

For each seed it prints the sessions, how many settled, events, index gaps, tool side
effects and how many ran twice (counted by a stand-in service), hook misses, reminders
armed and fired (and fired twice), turns that failed (killed workers), and the time taken.
The short version is tests/emulator/test_chaos.py.

Run: python bench/bench_emulated_chaos.py [SESSIONS] [SEEDS...] [--workers N]. Prints
numbers; asserts nothing. It takes a while: each seed starts its own stack.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.emulator.chaos_driver import run_sessions
from tests.emulator.helpers import emulated, stand_in, write_agent

SESSIONS = 200
SEEDS = (1, 2, 3, 4, 5)
SPEC = "duplicate=0.5,timeout=0.2,throttle=0.1"
# Conversations driven at once. Most of a session's time is spent waiting (a killed turn
# waits out its lease and the sweep), so more than the functions' environments overlap.
WORKERS = 8


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", type=int, nargs="?", default=SESSIONS)
    parser.add_argument("seeds", type=int, nargs="*", default=list(SEEDS))
    parser.add_argument("--workers", type=int, default=WORKERS, help="conversations at once")
    args = parser.parse_args(argv)
    sessions, seeds = args.sessions, tuple(args.seeds)
    header = (
        "seed",
        "sessions",
        "settled",
        "events",
        "gaps",
        "effects",
        "twice",
        "hook_miss",
        "rem_armed",
        "rem_fired",
        "rem_twice",
        "turn_failed",
        "faults",
        "seconds",
    )
    print(" ".join(f"{h:>11}" for h in header))
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            project = write_agent(Path(tmp) / "project")
            started = time.monotonic()
            with (
                stand_in() as standin,
                emulated(project, standin, "--chaos", f"{SPEC},seed={seed}") as server,
            ):
                out = run_sessions(server, standin, sessions, timeout=900, workers=args.workers)
                faults = len(server.chaos_lines())
            row = (
                seed,
                out.sessions,
                out.settled,
                out.events,
                len(out.gaps),
                out.effects,
                len(out.effects_twice),
                len(out.hook_misses),
                out.reminders_armed,
                out.reminders_fired,
                len(out.reminders_twice),
                out.failed_turns,
                faults,
                round(time.monotonic() - started),
            )
            print(" ".join(f"{v:>11}" for v in row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
