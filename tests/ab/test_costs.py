"""Cost per turn: usage once per model message, prices per model id, `costUsd` on events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.costs import PRICES_FILE_ENV, Price, PriceTable
from agentkit.events import Usage
from agentkit.models.base import Finish
from agentkit.models.scripted import ScriptedModel, Step, call, text
from agentkit.sessions import Principal

from .conftest import PRICES, RuntimeFactory, agent_py, settle

ALICE = Principal("alice")


def two_steps() -> list[Step]:
    return [
        Step.tool_calls(
            call("add", {"a": 1, "b": 2}),
            usage=Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=500),
        ),
        Step.text("3", usage=Usage(input_tokens=1200, output_tokens=100, cache_write_tokens=100)),
    ]


async def test_turn_and_steps_carry_their_cost(make_runtime: RuntimeFactory) -> None:
    model = ScriptedModel(two_steps())
    rt = make_runtime({"agent/agent.py": agent_py(prices=PRICES)}, lambda _id: model)
    acc = await rt.start_session("1+2?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    steps = [e.data for e in events if e.type == "step.completed"]
    # step 1: 1000*3 + 200*15 + 500*0.3 = 6150 micro-dollars; step 2: 3600+1500+375
    assert [s["costUsd"] for s in steps] == [pytest.approx(0.00615), pytest.approx(0.005475)]
    done = next(e.data for e in events if e.type == "turn.completed")
    assert done["costUsd"] == pytest.approx(0.011625)
    assert done["usage"]["inputTokens"] == 2200


async def test_unknown_price_leaves_cost_out(make_runtime: RuntimeFactory) -> None:
    model = ScriptedModel(two_steps(), model_id="mystery-model")
    rt = make_runtime({}, lambda _id: model)
    acc = await rt.start_session("1+2?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    for e in events:
        if e.type in ("step.completed", "turn.completed"):
            assert "costUsd" not in e.data, e.data
    assert next(e for e in events if e.type == "turn.completed").data["usage"]["outputTokens"]


async def test_usage_repeated_under_one_message_id_counts_once(
    make_runtime: RuntimeFactory,
) -> None:
    once = Usage(input_tokens=100, output_tokens=10)
    step = Step.of(
        text("hello"),
        Finish("end_turn", once, message_id="msg_1"),
        Finish("end_turn", once, message_id="msg_1"),  # the provider repeats it
        Finish("end_turn", Usage(input_tokens=1, output_tokens=1), message_id="msg_2"),
    )
    model = ScriptedModel([step])
    rt = make_runtime({"agent/agent.py": agent_py(prices=PRICES)}, lambda _id: model)
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    done = next(e.data for e in await rt.store.read(acc.session_id) if e.type == "turn.completed")
    assert done["usage"]["inputTokens"] == 101
    assert done["usage"]["outputTokens"] == 11
    assert done["costUsd"] == pytest.approx((101 * 3 + 11 * 15) / 1e6)


def test_price_lookup_across_provider_spellings() -> None:
    table = PriceTable()
    sonnet = table.price("anthropic:claude-sonnet-4-5")
    assert sonnet == Price(3.0, 15.0, 0.30, 3.75)
    assert table.price("anthropic:claude-sonnet-4-5-20250929") == sonnet
    assert table.price("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0") == sonnet
    assert table.price("openai:gpt-4o-mini-2024-07-18") == table.price("openai:gpt-4o-mini")
    assert table.price("openai:gpt-4o-mini") != table.price("openai:gpt-4o")
    assert table.price("test") is None
    assert table.cost("test", Usage(input_tokens=5)) is None


def test_prices_file_and_agent_option_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps({"openai:gpt-4o": {"input": 1, "output": 2}, "house": {"input": 9, "output": 9}})
    )
    monkeypatch.setenv(PRICES_FILE_ENV, str(path))
    table = PriceTable.for_agent({"prices": {"house": {"input": 1, "output": 1}}})
    assert table.price("openai:gpt-4o") == Price(1.0, 2.0)
    assert table.price("house") == Price(1.0, 1.0)  # the agent's own wins over the file
    assert table.cost("house", Usage(input_tokens=1_000_000)) == 1.0
    with pytest.raises(ValueError, match="input"):
        PriceTable.for_agent({"prices": {"x": {"output": 1}}})


def test_agentkit_run_prints_the_turn_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkit.cli import main
    from tests.ab.conftest import BASE, write

    price = {"input": 2.0, "output": 10.0}
    root = write(
        tmp_path / "agent-project",
        {**BASE, "agent/agent.py": agent_py(model="test", prices={"test": price})},
    )
    (root / "pyproject.toml").write_text('[project]\nname = "costly"\n')
    assert main(["run", "--dir", str(root), "--json", "add 2 and 3"]) == 0
    out = json.loads(capsys.readouterr().out)
    usage = out["usage"]
    expected = (usage["inputTokens"] * 2.0 + usage["outputTokens"] * 10.0) / 1e6
    assert usage["inputTokens"] > 0
    assert out["costUsd"] == pytest.approx(expected)

    # Without a price the cost is absent, never a made-up zero.
    (root / "agent" / "agent.py").write_text(agent_py(model="test"))
    assert main(["run", "--dir", str(root), "--json", "add 2 and 3"]) == 0
    assert "costUsd" not in json.loads(capsys.readouterr().out)
