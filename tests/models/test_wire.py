"""The wire-format steps the provider adapters share."""

from __future__ import annotations

import pytest

from agentkit.errors import ModelError
from agentkit.models._retry import other_error
from agentkit.models._wire import add_blocks, tool_arguments


def test_assembled_arguments_decode_to_a_dict():
    assert tool_arguments("Anthropic", "get_weather", '{"city": "Paris"}') == {"city": "Paris"}


def test_no_argument_text_means_no_arguments():
    assert tool_arguments("OpenAI", "now", "  ") == {}


def test_a_json_value_that_is_not_an_object_is_wrapped():
    assert tool_arguments("Bedrock", "echo", "[1, 2]") == {"value": [1, 2]}


def test_malformed_arguments_name_the_provider_and_the_tool():
    with pytest.raises(ModelError, match="Bedrock sent malformed arguments for tool 'echo'"):
        tool_arguments("Bedrock", "echo", '{"city": ')


def test_blocks_of_the_same_role_join_the_previous_message():
    messages: list[dict] = []
    add_blocks(messages, "user", [{"text": "hi"}])
    add_blocks(messages, "user", [{"toolResult": {}}])
    add_blocks(messages, "assistant", [{"text": "hello"}])
    assert messages == [
        {"role": "user", "content": [{"text": "hi"}, {"toolResult": {}}]},
        {"role": "assistant", "content": [{"text": "hello"}]},
    ]


def test_an_sdk_failure_and_a_bug_read_differently():
    sdk = other_error("OpenAI", RuntimeError("stream closed"), from_sdk=True)
    bug = other_error("OpenAI", KeyError("choices"), from_sdk=False)
    assert str(sdk) == "The OpenAI call failed: stream closed"
    assert str(bug) == "Unexpected failure in the OpenAI provider: KeyError('choices')"
    assert not sdk.retryable and not bug.retryable
