"""The bounded waits of `ask` and `check`: one MCP request always ends inside API
Gateway's 29-second integration limit, however long a caller asks to wait."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentkit.mcp import delegate


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
