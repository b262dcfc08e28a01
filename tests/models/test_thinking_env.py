"""`AGENTKIT_THINKING_BUDGET`: parsed once per model, sent as the provider's thinking
budget, off when unset, empty, zero or negative, and a `ModelError` naming the variable
when it is not a whole number."""

from __future__ import annotations

import pytest

from agentkit.errors import ModelError
from agentkit.models._env import thinking_budget_from_env
from agentkit.models.anthropic import AnthropicModel
from tests.models import test_anthropic, test_bedrock
from tests.models.common import ask
from tests.models.replay import ReplayServer, collect, sse

VAR = "AGENTKIT_THINKING_BUDGET"


@pytest.mark.parametrize(
    ("raw", "budget"),
    [("2048", 2048), (" 512 ", 512), ("0", None), ("-5", None), ("", None), ("  ", None)],
)
def test_the_variable_parses_to_a_budget_or_none(
    monkeypatch: pytest.MonkeyPatch, raw: str, budget: int | None
) -> None:
    monkeypatch.setenv(VAR, raw)
    assert thinking_budget_from_env() == budget


def test_unset_means_no_thinking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    assert thinking_budget_from_env() is None


@pytest.mark.parametrize("raw", ["abc", "1.5", "1e3", "10k", "0x10"])
def test_a_value_that_is_not_a_whole_number_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(ModelError, match=VAR) as caught:
        AnthropicModel("claude-sonnet-4-5")
    assert repr(raw) in str(caught.value)


async def test_the_budget_from_the_environment_reaches_anthropic(
    monkeypatch: pytest.MonkeyPatch, server: ReplayServer
) -> None:
    monkeypatch.setenv(VAR, "3000")
    server.queue(sse("anthropic_thinking_text.sse"))
    await collect(test_anthropic.model(server).stream(ask()))
    body = server.received[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert body["max_tokens"] == ask().max_tokens + 3000


async def test_an_explicit_budget_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, server: ReplayServer
) -> None:
    monkeypatch.setenv(VAR, "not a number")  # never read: the argument is given
    server.queue(sse("anthropic_thinking_text.sse"))
    await collect(test_anthropic.model(server, thinking_budget=1024).stream(ask()))
    assert server.received[0].json()["thinking"]["budget_tokens"] == 1024


async def test_zero_sends_no_thinking_block(
    monkeypatch: pytest.MonkeyPatch, server: ReplayServer
) -> None:
    monkeypatch.setenv(VAR, "0")
    server.queue(sse("anthropic_thinking_text.sse"))
    await collect(test_anthropic.model(server).stream(ask()))
    assert "thinking" not in server.received[0].json()


def test_bedrock_reads_the_same_variable(
    monkeypatch: pytest.MonkeyPatch, server: ReplayServer
) -> None:
    monkeypatch.setenv(VAR, "many")
    with pytest.raises(ModelError, match=VAR):
        test_bedrock.model(server)
