"""The `test` model: deterministic, offline, calls tools with valid arguments, then answers."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agentkit.models import resolve_model
from agentkit.models.base import (
    AssistantMessage,
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from agentkit.models.test import TestModel
from tests.models.replay import collect


class WeatherInput(BaseModel):
    city: str = Field(description="City name")
    days: int = Field(default=1, ge=1, le=7)


class NoteInput(BaseModel):
    title: str
    body: str


WEATHER = ToolSchema("get_weather", "Get the weather for a city.", WeatherInput.model_json_schema())
NOTE = ToolSchema("save_note", "Save a note.", NoteInput.model_json_schema())
TIME = ToolSchema("current_time", "The time now.", {"type": "object", "properties": {}})
LOAD_SKILL = ToolSchema(
    "load_skill",
    "Load a skill.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)


def ask(text: str, tools: list[ToolSchema]) -> ModelRequest:
    return ModelRequest(system="You help.", messages=[UserMessage(text)], tools=tools)


def calls(chunks: list[object]) -> list[ToolCall]:
    return [c.call for c in chunks if isinstance(c, ToolCallChunk)]


async def test_resolving_test_gives_the_test_model():
    model = resolve_model("test")
    assert isinstance(model, TestModel) and model.id == "test"


async def test_with_tools_it_reasons_then_calls_the_tool_named_in_the_message():
    chunks = await collect(TestModel().stream(ask("What's the weather in Paris?", [TIME, WEATHER])))
    assert isinstance(chunks[0], ReasoningDelta)
    [call] = calls(chunks)
    assert call.name == "get_weather"
    assert WeatherInput.model_validate(call.arguments) == WeatherInput(city="Paris")
    assert isinstance(chunks[-1], Finish) and chunks[-1].stop_reason == "tool_use"


async def test_several_tools_named_in_the_message_are_all_called_in_offered_order():
    chunks = await collect(
        TestModel().stream(ask("Save a note with the weather and the time", [WEATHER, NOTE, TIME]))
    )
    assert [c.name for c in calls(chunks)] == ["get_weather", "save_note", "current_time"]
    assert len({c.id for c in calls(chunks)}) == 3


async def test_when_no_tool_is_named_the_first_offered_one_is_called():
    chunks = await collect(TestModel().stream(ask("Hello there", [NOTE, WEATHER])))
    [call] = calls(chunks)
    assert call.name == "save_note"
    NoteInput.model_validate(call.arguments)


async def test_built_in_tools_are_skipped_while_others_are_offered():
    chunks = await collect(TestModel().stream(ask("load the skill please", [LOAD_SKILL, TIME])))
    assert [c.name for c in calls(chunks)] == ["current_time"]


async def test_built_in_tools_are_called_when_nothing_else_is_offered():
    chunks = await collect(TestModel().stream(ask("help", [LOAD_SKILL])))
    assert [c.name for c in calls(chunks)] == ["load_skill"]


async def test_after_tool_results_it_answers_with_text_that_reflects_them():
    request = ModelRequest(
        system="You help.",
        messages=[
            UserMessage("Weather in Paris and the time?"),
            AssistantMessage(
                tool_calls=(
                    ToolCall("c1", "get_weather", {"city": "Paris"}),
                    ToolCall("c2", "current_time", {}),
                )
            ),
            ToolResultMessage("c1", "get_weather", json.dumps({"temp": 21, "sky": "clear"})),
            ToolResultMessage("c2", "current_time", "clock unavailable", is_error=True),
        ],
        tools=[WEATHER, TIME],
    )
    chunks = await collect(TestModel().stream(request))
    deltas = [c.text for c in chunks if isinstance(c, TextDelta)]
    text = "".join(deltas)
    assert len(deltas) > 1
    assert '"temp": 21' in text and "current_time failed: clock unavailable" in text
    assert calls(chunks) == []
    assert chunks[-1].stop_reason == "end_turn"


async def test_without_tools_it_answers_from_the_message_in_several_deltas():
    chunks = await collect(TestModel().stream(ask("Tell me a story about otters", [])))
    deltas = [c.text for c in chunks if isinstance(c, TextDelta)]
    assert len(deltas) > 1
    assert "Tell me a story about otters" in "".join(deltas)
    assert not any(isinstance(c, ReasoningDelta) for c in chunks)


async def test_same_request_same_chunks():
    request = ask("Weather in Oslo for 3 days?", [WEATHER, NOTE])
    assert await collect(TestModel().stream(request)) == await collect(TestModel().stream(request))


async def test_call_ids_differ_between_turns_of_one_conversation():
    first = calls(await collect(TestModel().stream(ask("Weather in Oslo?", [WEATHER]))))
    later = ModelRequest(
        system="You help.",
        messages=[
            UserMessage("Weather in Oslo?"),
            AssistantMessage(tool_calls=tuple(first)),
            ToolResultMessage(first[0].id, "get_weather", "{}"),
            AssistantMessage(text="Done."),
            UserMessage("Weather in Oslo?"),
        ],
        tools=[WEATHER],
    )
    second = calls(await collect(TestModel().stream(later)))
    assert first[0].id != second[0].id


async def test_usage_grows_with_the_size_of_the_request():
    short = (await collect(TestModel().stream(ask("Hi", []))))[-1]
    long = (await collect(TestModel().stream(ask("Hi " * 400, []))))[-1]
    assert 0 < short.usage.input_tokens < long.usage.input_tokens
    assert short.usage.output_tokens > 0
