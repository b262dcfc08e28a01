"""Every session the examples' evals record replays on its own bundle with no divergence.

The evals run in-process on the offline test model; each recorded session (the case's own
and any a schedule started) is written as NDJSON and replayed from that file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentkit.evals.runner import EvalRunner
from agentkit.events import Event
from agentkit.project.bundle import AgentBundle
from agentkit.replay import ReplayReport, load_events, replay_session

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def record_evals(bundle: AgentBundle, into: Path) -> list[Path]:
    """Run every eval of `bundle` once; one NDJSON file per recorded session."""

    async def run() -> list[tuple[Event, ...]]:
        result = await EvalRunner(bundle, model="test", trials=1).run(bundle.manifest.evals)
        failing = [(c.id, c.first_failure) for c in result.cases if c.status != "passed"]
        assert not failing, failing
        return [t.events for c in result.cases for t in c.trials]

    files = []
    for events in asyncio.run(run()):
        path = into / f"{events[0].session_id}.ndjson"
        path.write_bytes(b"".join(e.to_line() for e in events))
        files.append(path)
    return files


@pytest.mark.parametrize(
    "example", sorted(p.name for p in EXAMPLES.iterdir() if (p / "evals").is_dir())
)
def test_every_recorded_session_replays_with_no_divergence(example: str, tmp_path: Path) -> None:
    bundle = AgentBundle.discover(EXAMPLES / example)
    files = record_evals(bundle, tmp_path)
    assert len(files) == len(bundle.manifest.evals)

    async def replay_all() -> list[ReplayReport]:
        return [await replay_session(bundle, load_events(f)) for f in files]

    reports = asyncio.run(replay_all())
    diverged = {r.session_id: [d.line() for d in r.divergences] for r in reports if not r.ok}
    assert diverged == {}
    # The cassette really answered: recorded results were served, none was missed.
    assert sum(r.served for r in reports) > 0
