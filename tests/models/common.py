"""Requests, tools and retry policies the provider adapter tests share."""

from __future__ import annotations

from agentkit.models._retry import RetryPolicy
from agentkit.models.base import ModelRequest, ToolSchema, UserMessage

WEATHER = ToolSchema(
    "get_weather",
    "Get the weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


class SleepRecorder:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def ask(text: str = "Hi", **kwargs: object) -> ModelRequest:
    """A one-message request with a short system prompt; `kwargs` go to `ModelRequest`."""
    return ModelRequest(system="Be brief.", messages=[UserMessage(text)], **kwargs)  # type: ignore[arg-type]


def retry_policy(sleeps: SleepRecorder | None = None) -> RetryPolicy:
    """The default policy, recording its delays in `sleeps` instead of waiting when given."""
    return RetryPolicy(sleep=sleeps) if sleeps is not None else RetryPolicy()
