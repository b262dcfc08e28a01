"""`agent_prices`: the price table a turn uses is built once, and built again whenever what
it was built from changes (the agent's options, the prices file, that file's content)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.costs import PRICES_FILE_ENV, Price, PriceTable, agent_prices


@pytest.fixture(autouse=True)
def no_prices_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES_FILE_ENV, raising=False)


def house(price: float) -> dict[str, object]:
    return {"prices": {"house": {"input": price, "output": price}}}


def test_the_same_options_give_the_same_table() -> None:
    options = house(1.0)
    assert agent_prices(options) is agent_prices(options)
    assert agent_prices(options).price("house") == Price(1.0, 1.0)


def test_other_options_give_their_own_table() -> None:
    first = house(1.0)
    assert agent_prices(first).price("house") == Price(1.0, 1.0)
    reloaded = house(2.0)  # a reloaded agent: new options, new prices
    assert agent_prices(reloaded).price("house") == Price(2.0, 2.0)
    assert agent_prices(first).price("house") == Price(1.0, 1.0)


def test_a_changed_prices_file_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"filed": {"input": 1, "output": 1}}))
    monkeypatch.setenv(PRICES_FILE_ENV, str(path))
    options: dict[str, object] = {}
    assert agent_prices(options).price("filed") == Price(1.0, 1.0)
    path.write_text(json.dumps({"filed": {"input": 30, "output": 30}}))
    assert agent_prices(options).price("filed") == Price(30.0, 30.0)


def test_another_prices_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, object] = {}
    assert agent_prices(options).price("filed") is None
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"filed": {"input": 4, "output": 4}}))
    monkeypatch.setenv(PRICES_FILE_ENV, str(path))
    assert agent_prices(options).price("filed") == Price(4.0, 4.0)
    monkeypatch.delenv(PRICES_FILE_ENV)
    assert agent_prices(options).price("filed") is None


def test_a_missing_prices_file_is_an_error_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PRICES_FILE_ENV, str(tmp_path / "gone.json"))
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            agent_prices({})


def test_a_repeated_lookup_gives_the_first_answer() -> None:
    table = PriceTable()
    for model_id in ("openai:gpt-4o-mini-2024-07-18", "test", "anthropic:claude-sonnet-4-5"):
        first = table.price(model_id)
        assert table.price(model_id) == first == PriceTable().price(model_id)
