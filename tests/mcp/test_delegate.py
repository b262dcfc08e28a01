"""The bounded waits of `ask` and `check`: one MCP request always ends inside API
Gateway's 29-second integration limit, however long a caller asks to wait, and a turn that
already ended or parked is answered at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentkit.engine.service import AgentService
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.mcp import delegate
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from tests.fixtures.http_server import write_agent


def test_waits_default_to_25_seconds_and_are_capped_there() -> None:
    assert delegate.AskInput(message="hi").wait_seconds == 25
    assert delegate.CheckInput(session_id="ses_x").wait_seconds == 25
    assert delegate.MAX_WAIT < 29  # API Gateway's limit, with room to answer
    assert delegate._wait(600) == delegate.MAX_WAIT
    assert delegate._wait(3.5) == 3.5
    assert delegate._wait(0) == 0


def test_the_inputs_use_the_wire_names_and_refuse_unknown_fields() -> None:
    parsed = delegate.AskInput.model_validate(
        {"message": "hi", "sessionId": "ses_1", "continuationToken": "t", "waitSeconds": 2}
    )
    assert (parsed.session_id, parsed.continuation_token, parsed.wait_seconds) == ("ses_1", "t", 2)
    with pytest.raises(ValidationError):
        delegate.AskInput.model_validate({"message": "hi", "waitSeconds": -1})
    with pytest.raises(ValidationError):
        delegate.CheckInput.model_validate({"sessionId": "ses_1", "extra": True})


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[AgentService]:
    bundle = AgentBundle.discover(write_agent(tmp_path / "desk"))
    local = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state"))
    await local.start()
    yield local.runtime
    await local.aclose()


async def test_check_after_a_settled_turn_answers_at_once(service: AgentService) -> None:
    caller = Principal("user_1")
    loop = asyncio.get_running_loop()
    asked = await delegate.ask(
        service, caller, delegate.AskInput(message="What is the weather in Paris?")
    )
    assert asked.status == "completed" and "Paris" in (asked.reply or "")
    began = loop.time()
    checked = await delegate.check(
        service, caller, delegate.CheckInput(session_id=asked.session_id, wait_seconds=25)
    )
    assert (checked.status, checked.reply) == ("completed", asked.reply)
    assert loop.time() - began < 12  # answered from what is recorded, not after the wait

    parked = await delegate.ask(
        service,
        caller,
        delegate.AskInput(
            message="wipe the notes folder",
            session_id=asked.session_id,
            continuation_token=asked.continuation_token,
        ),
    )
    assert parked.status == "waiting_approval"  # the new turn, not the last one's reply
    began = loop.time()
    again = await delegate.check(service, caller, delegate.CheckInput(session_id=asked.session_id))
    assert again.status == "waiting_approval"
    assert loop.time() - began < 12
