"""The hosts offer the ports their routes ask for: a method renamed on a host would
otherwise turn its dev, eval, A/B or meta route into the answer for an absent capability."""

from __future__ import annotations

from pathlib import Path

from agentkit.ab.service import KeepsAbSnapshot
from agentkit.evals.runs import EvalRunService, ServesEvalRuns
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.mcp.ports import HoldsMcp
from agentkit.project.bundle import AgentBundle
from agentkit.scheduling.catch_up import ListsSchedules
from agentkit.scheduling.reminders import KeepsReminders
from agentkit.scheduling.schedules import DispatchesSchedules
from agentkit.server.options import NamedHost
from tests.fixtures.http_server import write_agent


async def test_the_local_host_offers_schedules_reminders_evals_and_mcp(tmp_path: Path) -> None:
    bundle = AgentBundle.discover(write_agent(tmp_path / "chat"))
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    try:
        for port in (DispatchesSchedules, ListsSchedules, KeepsReminders, ServesEvalRuns, HoldsMcp):
            assert isinstance(host, port), port.__name__
        # Local: no snapshot of A/B totals to read, and no host kind but the default.
        assert not isinstance(host, KeepsAbSnapshot)
        assert not isinstance(host, NamedHost)
        assert isinstance(host.eval_runs, EvalRunService)
        assert host.eval_runs is host.eval_runs  # made once: a run started stays visible
    finally:
        await host.aclose()
