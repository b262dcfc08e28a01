"""The loop breaker's wrong stops: of 200 healthy long sessions, how many did it stop?

Each session is one of the examples' evals, continued with follow-ups on the offline `test`
model (see `bench/healthy_sessions.py`). Goal: 0 stopped. Printed, not asserted (the CI
test `tests/engine/test_loop_guard_healthy.py` asserts it over a few sessions).

    python bench/bench_loop_guard.py [--sessions 200] [--follow-ups 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
os.environ.pop("AGENTKIT_MODEL", None)  # the examples run on the offline test model

from bench.healthy_sessions import example_cases, measure  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--follow-ups", type=int, default=12)
    args = parser.parse_args()
    cases = example_cases()
    started = time.perf_counter()
    tally = asyncio.run(measure(args.sessions, args.follow_ups, cases))
    took = time.perf_counter() - started
    print(f"cases:            {len(cases)} example evals, {args.follow_ups} follow-ups each")
    print(f"sessions:         {tally.sessions} ({tally.turns} turns, {took:.1f} s)")
    print(f"stopped wrongly:  {len(tally.stopped)}")
    print(f"share:            {tally.share:.2%}  (goal: 0)")
    for line in tally.stopped[:20]:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
