"""`agentkit eval export`: a recorded session becomes a case that passes on its bundle."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from agentkit.cli import main
from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.test import TestModel
from agentkit.project.bundle import AgentBundle
from agentkit.replay.export import case_source, key_phrases
from agentkit.sessions import Principal
from agentkit.store.files import FileStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OWNER = Principal("alice")


def record(project: Path, messages: list[str], *, approve: bool = False) -> str:
    """One session on the test model in the project's state folder; its id."""

    async def run() -> str:
        store = FileStore(project / ".agentkit")
        rt = AgentRuntime(
            AgentBundle.discover(project),
            store,
            model_resolver=lambda _id: TestModel(),
            state_root=project / ".agentkit",
        )
        drain = rt.dispatcher
        assert isinstance(drain, LocalDispatcher)
        try:
            accepted = await rt.start_session(messages[0], principal=OWNER)
            await drain.drain()
            if approve:
                [pending] = await rt.approvals(accepted.session_id, principal=OWNER)
                await rt.resolve_approval(
                    accepted.session_id, pending.call_id, "approve", principal=OWNER
                )
                await drain.drain()
            token = accepted.continuation_token
            for text in messages[1:]:
                token = (
                    await rt.follow_up(accepted.session_id, token, text, principal=OWNER)
                ).continuation_token
                await drain.drain()
            return accepted.session_id
        finally:
            await store.close()

    return asyncio.run(run())


def copy_example(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def export(project: Path, session_id: str, name: str) -> int:
    state = str(project / ".agentkit")
    args = ["--session", session_id, "--state-root", state, "--dir", str(project), "--name", name]
    return main(["eval", "export", *args])


def test_an_exported_conversation_passes_on_its_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_example("weather", tmp_path)
    sid = record(project, ["What's the weather in Paris?", "And the weather in Oslo?"])
    assert export(project, sid, "recorded/two_cities") == 0
    source = (project / "evals/recorded/two_cities.eval.py").read_text()
    assert 'say("What\'s the weather in Paris?")' in source
    assert 'called_tools("get_weather", "get_weather")' in source
    assert "turns_completed(2)" in source and "reply_contains(" in source
    assert main(["eval", "--dir", str(project), "--filter", "recorded/two_cities"]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_an_exported_approval_passes_on_its_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_example("pr-review", tmp_path)
    sid = record(project, ["Approve PR #1 please."], approve=True)
    assert export(project, sid, "recorded/approval") == 0
    source = (project / "evals/recorded/approval.eval.py").read_text()
    assert 'approve("approve_pr")' in source
    assert main(["eval", "--dir", str(project), "--filter", "recorded/approval"]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_the_exported_case_fails_when_the_trajectory_changes(tmp_path: Path) -> None:
    project = copy_example("weather", tmp_path)
    sid = record(project, ["What's the weather in Paris?"])
    assert export(project, sid, "recorded/paris") == 0
    (project / "agent/tools/get_weather.py").unlink()  # the tool it called is gone
    assert main(["eval", "--dir", str(project), "--filter", "recorded/paris"]) == 1


def test_export_refuses_to_overwrite_a_case(tmp_path: Path) -> None:
    project = copy_example("weather", tmp_path)
    sid = record(project, ["What's the weather in Paris?"])
    assert export(project, sid, "paris") == 1  # the example has evals/paris.eval.py


def test_an_unknown_session_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_example("weather", tmp_path)
    record(project, ["What's the weather in Paris?"])
    assert export(project, "ses_missing", "recorded/none") == 1
    assert "cannot read session ses_missing" in capsys.readouterr().err


def test_key_phrases_are_distinctive_words_in_order() -> None:
    assert key_phrases("It is sunny in Paris, about 21C; sunny again.") == ["sunny", "paris"]


def test_a_direct_call_is_exported_as_a_call_tool_step() -> None:
    from agentkit.events import Event

    def ev(i: int, type_: str, data: dict, turn: str | None = None) -> Event:
        return Event(type_, i, "ses_x", "2026-01-01T00:00:00.000Z", data, turn)

    events = [
        ev(0, "session.started", {"channelId": "http", "mode": "chat"}),
        ev(1, "message.received", {"message": "hi"}),
        ev(2, "turn.started", {}, "t1"),
        ev(3, "turn.completed", {"result": "ok"}, "t1"),
        ev(
            4,
            "actions.requested",
            {"actions": [{"callId": "d1", "toolName": "remind_me", "arguments": {"delay": "2h"}}]},
        ),
        ev(5, "action.result", {"callId": "d1", "toolName": "remind_me", "result": 1}),
    ]
    source = case_source(events)
    assert 'call_tool("remind_me", delay="2h")' in source
    assert 'called_tools("remind_me")' in source
