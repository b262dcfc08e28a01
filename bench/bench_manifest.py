"""Cold-start cost: loading a built manifest vs walking the agent folder.

A Lambda function loads `manifest.json` and imports a handler only when it is first used;
`agentkit serve` (and the build itself) walks `agent/` and imports every definition. This
prints both for examples/pr-review, measured in the same run, and their ratio.
Goal: manifest load (plus one lazy handler import) at most 1/5 of the discovery walk.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentkit.project.build import build_project
from agentkit.project.bundle import AgentBundle

PROJECT = Path(__file__).resolve().parent.parent / "examples" / "pr-review"
ROUNDS = 30


def _time(fn: Callable[[], None], rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = build_project(PROJECT, Path(tmp) / "build").out
        AgentBundle.discover(PROJECT)  # warm the interpreter's own imports (pydantic, ...)

        def discover() -> None:
            AgentBundle.discover(PROJECT)

        def load_built() -> None:
            AgentBundle.load_built(out)

        def load_built_and_first_tool() -> None:
            bundle = AgentBundle.load_built(out)
            assert bundle.tool("inspect_pr") is not None

        walk = _time(discover)
        manifest = _time(load_built)
        manifest_tool = _time(load_built_and_first_tool)
    print(f"examples/pr-review, median of {ROUNDS} rounds")
    print(f"  discovery walk (imports every definition)   {walk * 1000:8.2f} ms")
    print(f"  load manifest.json                          {manifest * 1000:8.2f} ms")
    print(f"  load manifest.json + import one tool        {manifest_tool * 1000:8.2f} ms")
    print(f"  ratio manifest/discovery                    {manifest / walk:8.3f}")
    ratio = manifest_tool / walk
    print(f"  ratio manifest+tool/discovery               {ratio:8.3f}  (goal <= 0.200)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
