"""define_channel, define_ab, define_mcp_connection, define_eval and define_evals_config."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from agentkit import (
    Trajectory,
    called_tool,
    define_ab,
    define_channel,
    define_eval,
    define_evals_config,
    define_mcp_connection,
    did_not_call,
    reply_contains,
    reply_matches,
    route,
    succeeded,
    variant,
)
from agentkit.events import Event


class Body(BaseModel):
    pr: int


async def handler(body: Body, ctx: Any) -> dict[str, Any]:
    return {}


# -- channels -----------------------------------------------------------------------------


def test_route_takes_the_body_model_from_the_handler() -> None:
    r = route("post", "start", handler)
    assert (r.method, r.path, r.body) == ("POST", "/start", Body)
    assert r.body_schema() == Body.model_json_schema()


def test_route_rejects_unknown_methods_and_escaping_paths() -> None:
    with pytest.raises(ValueError, match="method"):
        route("FETCH", "/", handler)
    with pytest.raises(ValueError, match="clean"):
        route("GET", "/../x", handler)


def test_channel_rejects_duplicate_routes() -> None:
    with pytest.raises(ValueError, match="twice"):
        define_channel(routes=[("POST", "/", handler), ("post", "/", handler)])


def test_channel_needs_a_route_or_an_event() -> None:
    with pytest.raises(ValueError, match="at least one"):
        define_channel()


def test_channel_rejects_unknown_event_types() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        define_channel(events={"turn.done": print})


def test_channel_continuation_rule_maps_bodies_to_keys() -> None:
    channel = define_channel(
        routes=[route("POST", "/", handler)], continuation=lambda b: f"pr:{b.pr}"
    )
    assert channel.continuation_key(Body(pr=7)) == "pr:7"
    assert channel.find_route("post", "/") is channel.routes[0]
    assert define_channel(routes=[route("POST", "/", handler)]).continuation_key(Body(pr=1)) is None


# -- A/B ----------------------------------------------------------------------------------


def test_ab_assignment_is_sticky_and_follows_weights() -> None:
    ab = define_ab(variants={"a": variant(weight=1), "b": {"weight": 3, "model": "test"}})
    assert ab.assign("exp", "ses_1") == ab.assign("exp", "ses_1")
    counts = Counter(ab.assign("exp", f"ses_{i}") for i in range(4000))
    assert 0.2 < counts["a"] / 4000 < 0.3
    assert ab.variants["b"].model == "test"


def test_ab_needs_two_variants_with_positive_weights() -> None:
    with pytest.raises(ValueError, match="two variants"):
        define_ab(variants={"only": variant()})
    with pytest.raises(ValueError, match="positive"):
        define_ab(variants={"a": variant(), "b": variant(weight=0)})


# -- MCP ----------------------------------------------------------------------------------


def test_mcp_needs_exactly_one_transport() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        define_mcp_connection()
    with pytest.raises(ValueError, match="exactly one"):
        define_mcp_connection(url="https://x", command="y")


def test_mcp_headers_expand_from_the_environment_at_use_time() -> None:
    conn = define_mcp_connection(url="https://mcp.example.com", headers={"Auth": "Bearer ${TOK}"})
    assert conn.headers == {"Auth": "Bearer ${TOK}"}
    assert conn.resolved_headers({"TOK": "s3cret"}) == {"Auth": "Bearer s3cret"}


def test_mcp_stdio_command_is_split_like_a_shell() -> None:
    conn = define_mcp_connection(command='server --name "my tools"', env={"A": "${B}"})
    assert conn.command == ("server", "--name", "my tools")
    assert conn.resolved_env({"B": "1"}) == {"A": "1"}


def test_mcp_rejects_mismatched_options() -> None:
    with pytest.raises(ValueError, match="http"):
        define_mcp_connection(url="ftp://x")
    with pytest.raises(ValueError, match="headers"):
        define_mcp_connection(command="x", headers={"a": "b"})


# -- evals --------------------------------------------------------------------------------


def _events(*items: tuple[str, dict[str, Any]]) -> Trajectory:
    return Trajectory(
        events=tuple(
            Event(type=t, index=i, session_id="s", at="2026-01-01T00:00:00.000Z", data=d)
            for i, (t, d) in enumerate(items)
        )
    )


TRAJECTORY = _events(
    (
        "actions.requested",
        {"actions": [{"callId": "c1", "toolName": "get_weather", "arguments": {"city": "Paris"}}]},
    ),
    ("action.result", {"callId": "c1", "toolName": "get_weather", "result": {"tempC": 21}}),
    ("message.completed", {"text": "It is 21C in Paris (simulated)."}),
    ("turn.completed", {"result": "ok"}),
)


def test_passing_assertions_report_no_failures() -> None:
    case = define_eval(
        message="Weather in Paris?",
        assertions=[
            succeeded(),
            called_tool("get_weather", city="Paris"),
            did_not_call("approve_pr"),
            reply_contains("SIMULATED"),
            reply_matches(r"\d+C"),
        ],
    )
    assert case.check(TRAJECTORY) == []
    assert TRAJECTORY.tool_calls[0].result == {"tempC": 21}


def test_failing_assertions_say_why() -> None:
    def custom(t: Trajectory) -> None:
        assert len(t.tool_calls) > 3, "expected many calls"

    case = define_eval(
        message="x",
        assertions=[called_tool("get_weather", city="Oslo"), reply_contains("snow"), custom],
    )
    failures = case.check(TRAJECTORY)
    assert len(failures) == 3
    assert "tools called: get_weather" in failures[0]
    assert failures[2].startswith("expected many calls")


def test_eval_needs_a_message_and_callable_assertions() -> None:
    with pytest.raises(ValueError):
        define_eval(message="  ")
    with pytest.raises(TypeError):
        define_eval(message="x", assertions=["not callable"])  # type: ignore[list-item]


def test_evals_config_validates_concurrency() -> None:
    assert define_evals_config(max_concurrency=3).max_concurrency == 3
    with pytest.raises(ValueError):
        define_evals_config(max_concurrency=0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_steps": 0}, "max_steps must be at least 1"),
        ({"on_busy": "sometimes"}, "on_busy must be interrupt, queue or reject"),
        ({"max_turn_seconds": True}, "max_turn_seconds must be a positive number"),
        ({"max_turn_seconds": "60"}, "max_turn_seconds must be a positive number"),
        ({"max_turn_seconds": 0}, "max_turn_seconds must be a positive number"),
        ({"stop_grace": -1}, "stop_grace must be zero or more"),
    ],
)
def test_define_agent_refuses_bad_settings_by_name(options: dict, message: str) -> None:
    from agentkit import define_agent

    with pytest.raises(ValueError, match=message):
        define_agent(**options)


def test_define_instructions_needs_text() -> None:
    from agentkit import define_instructions

    with pytest.raises(TypeError, match="needs markdown text"):
        define_instructions(3)  # type: ignore[arg-type]
    assert define_instructions("# Hi").markdown == "# Hi"
