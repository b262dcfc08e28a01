"""`replay_session`: a recorded session runs again on a bundle, and every seeded regression
is reported at the recorded event it is about."""

from __future__ import annotations

from pathlib import Path

from agentkit.models.base import ToolResultMessage
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.replay import replay_session
from tests.replay.conftest import Recorded, StandIn


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


async def test_the_same_bundle_replays_with_no_divergence_and_no_side_effects(
    recorded: Recorded, standin: StandIn
) -> None:
    report = await replay_session(AgentBundle.discover(recorded.project), recorded.events)
    assert report.ok, report.lines()
    # Four tool results stood in; the guide's answer came from the cassette model.
    assert report.served == 4 and report.turns == 1
    assert not recorded.note.exists()  # save_note never ran
    assert standin.hits == 1  # ping_server never called the server again
    assert not recorded.hooked.exists()  # the hook never saw the replayed events


async def test_a_renamed_tool_is_reported_at_its_request(recorded: Recorded) -> None:
    def rename(p: Path) -> None:
        (p / "agent/tools/get_weather.py").rename(p / "agent/tools/fetch_weather.py")
        edit(p / "agent/tools/fetch_weather.py", "def get_weather", "def fetch_weather")

    report = await replay_session(recorded.variant("renamed", rename), recorded.events)
    [d] = report.divergences
    assert (d.kind, d.index, d.tool) == (
        "tool_missing",
        recorded.requested("c_weather"),
        "get_weather",
    )
    assert "fetch_weather" in d.reason  # the likely new name


async def test_a_changed_schema_is_reported_at_its_request(recorded: Recorded) -> None:
    def change(p: Path) -> None:
        edit(p / "agent/tools/save_note.py", "    text: str", "    body: str")
        edit(p / "agent/tools/save_note.py", "input.text", "input.body")

    report = await replay_session(recorded.variant("schema", change), recorded.events)
    [d] = report.divergences
    assert (d.kind, d.index, d.tool) == (
        "schema_rejected",
        recorded.requested("c_note"),
        "save_note",
    )
    assert "text" in d.reason


async def test_a_new_needs_approval_is_reported_at_its_request(recorded: Recorded) -> None:
    def change(p: Path) -> None:
        edit(
            p / "agent/tools/ping_server.py",
            '@define_tool(description="Ping the booking server.")',
            '@define_tool(description="Ping the booking server.", needs_approval=True)',
        )

    report = await replay_session(recorded.variant("approval", change), recorded.events)
    [d] = report.divergences
    assert (d.kind, d.index, d.tool) == (
        "approval_added",
        recorded.requested("c_ping"),
        "ping_server",
    )


async def test_a_dropped_needs_approval_is_reported_at_the_recorded_approval(
    recorded: Recorded,
) -> None:
    def change(p: Path) -> None:
        edit(p / "agent/tools/book_trip.py", ", needs_approval=True", "")

    report = await replay_session(recorded.variant("no-approval", change), recorded.events)
    [d] = report.divergences
    at = recorded.index_of("action.approval_requested", callId="c_book")
    assert (d.kind, d.index, d.tool) == ("approval_removed", at, "book_trip")


async def test_a_removed_subagent_is_reported_at_its_call(recorded: Recorded) -> None:
    import shutil

    report = await replay_session(
        recorded.variant("no-guide", lambda p: shutil.rmtree(p / "agent/subagents")),
        recorded.events,
    )
    [d] = report.divergences
    at = recorded.index_of("subagent.called", callId="c_task")
    assert (d.kind, d.index) == ("subagent_missing", at)
    assert "guide" in d.reason


async def test_a_live_model_gets_recorded_results_for_matching_calls_only(
    recorded: Recorded,
) -> None:
    live = ScriptedModel(
        [
            Step.tool_calls(call("get_weather", {"city": "Paris"})),  # as recorded
            Step.tool_calls(call("get_weather", {"city": "Oslo"})),  # never recorded
            Step.text("Paris is sunny."),
        ]
    )
    bundle = AgentBundle.discover(recorded.project)
    report = await replay_session(bundle, recorded.events, model=live)
    results = [m for r in live.requests for m in r.messages if isinstance(m, ToolResultMessage)]
    paris, oslo = results[0], results[-1]
    assert not paris.is_error and "sunny" in paris.content
    assert oslo.is_error and "not in the recording" in oslo.content
    kinds = [d.kind for d in report.divergences]
    assert "unrecorded_call" in kinds
    assert kinds.count("call_not_made") == 4  # note, ping, the guide and the booking
    assert report.served == 1


async def test_a_replay_that_runs_out_of_time_says_so(recorded: Recorded) -> None:
    bundle = AgentBundle.discover(recorded.project)
    report = await replay_session(bundle, recorded.events, timeout=0.0001)
    [stopped] = [d for d in report.divergences if d.kind == "replay_stopped"]
    assert "did not finish within" in stopped.reason
    inputs = [recorded.index_of(t) for t in ("message.received", "action.approval_resolved")]
    assert stopped.index in inputs  # the input it was playing when the time ran out
