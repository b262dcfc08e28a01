"""`client.abs()` against an embedded server with an A/B experiment: the session the client
started shows with its arm, the one its stream recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentkit
from agentkit.events import EventType
from tests.fixtures.http_server import AGENT_FILES, SLUG, write_agent

FILES = {
    **AGENT_FILES,
    "agent/ab.py": """
        from agentkit import define_ab, variant

        ab = define_ab(
            name="tone",
            variants={"control": variant(), "concise": variant(instructions="Be brief.")},
        )
    """,
}


async def test_abs_reports_the_clients_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", "test")
    project = write_agent(tmp_path / SLUG, FILES)
    async with (
        agentkit.serve(project, state_root=tmp_path / "state") as handle,
        handle.client() as client,
    ):
        session = await client.start("What is the weather in Paris?")
        events = await session.wait(timeout=60)
        [assigned] = [e for e in events if e.type == EventType.AB_ASSIGNED]
        body = await client.abs()
    [row] = [r for r in body["sessions"] if r["sessionId"] == session.id]
    assert row["assignments"] == {"tone": assigned.data["variant"]}
    assert row["turns"] == 1
    assert {e["name"] for e in body["experiments"]} == {"tone"}
