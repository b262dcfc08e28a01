"""`ScriptedModel` plays steps in order, records requests, and fails clearly when done."""

from __future__ import annotations

import asyncio

import pytest

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models import ScriptedModel, Step
from agentkit.models.base import (
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    UserMessage,
)
from agentkit.models.scripted import call, delay, fail, reasoning, text
from tests.models.replay import collect


def ask(message: str = "Hi") -> ModelRequest:
    return ModelRequest(system="", messages=[UserMessage(message)])


async def test_text_step_streams_its_deltas_then_ends_the_turn():
    model = ScriptedModel([Step.text("Hel", "lo")])
    chunks = await collect(model.stream(ask()))
    assert chunks[:2] == [TextDelta("Hel"), TextDelta("lo")]
    assert isinstance(chunks[2], Finish) and chunks[2].stop_reason == "end_turn"


async def test_tool_call_step_ends_with_tool_use_after_reasoning_and_text():
    model = ScriptedModel(
        [
            Step.tool_calls(
                call("a", {"x": 1}, id="c1"),
                call("b", id="c2"),
                text="On it.",
                reasoning="Plan it.",
            )
        ]
    )
    chunks = await collect(model.stream(ask()))
    assert isinstance(chunks[0], ReasoningDelta)
    assert TextDelta("On it.") in chunks
    assert [c.call for c in chunks if isinstance(c, ToolCallChunk)] == [
        ToolCall("c1", "a", {"x": 1}),
        ToolCall("c2", "b", {}),
    ]
    assert chunks[-1].stop_reason == "tool_use"


async def test_reasoning_carries_its_signature_on_the_last_delta():
    model = ScriptedModel([Step.of(reasoning("think it through", signature="sig"), text("ok"))])
    chunks = await collect(model.stream(ask()))
    thoughts = [c for c in chunks if isinstance(c, ReasoningDelta)]
    assert "".join(t.text for t in thoughts) == "think it through"
    assert [t.signature for t in thoughts][-1] == "sig"
    assert all(t.signature is None for t in thoughts[:-1])


async def test_given_usage_is_reported():
    usage = Usage(input_tokens=10, output_tokens=3, cache_read_tokens=2)
    chunks = await collect(ScriptedModel([Step.text("x", usage=usage)]).stream(ask()))
    assert chunks[-1] == Finish("end_turn", usage)


async def test_steps_play_in_order_and_requests_are_recorded():
    model = ScriptedModel([Step.text("one"), Step.text("two")])
    first = await collect(model.stream(ask("a")))
    second = await collect(model.stream(ask("b")))
    assert (first[0], second[0]) == (TextDelta("one"), TextDelta("two"))
    assert [r.messages[0].text for r in model.requests] == ["a", "b"]
    assert model.remaining == 0


async def test_error_step_raises_model_error_with_its_retry_flag():
    model = ScriptedModel([Step.error("overloaded", retryable=True, status=529)])
    with pytest.raises(ModelError, match="overloaded") as caught:
        await collect(model.stream(ask()))
    assert caught.value.retryable and caught.value.status == 529


async def test_an_error_part_fails_mid_stream_after_earlier_parts():
    model = ScriptedModel([Step.of(text("partial"), fail("connection reset"))])
    seen = []
    with pytest.raises(ModelError, match="connection reset"):
        async for chunk in model.stream(ask()):
            seen.append(chunk)
    assert seen == [TextDelta("partial")]


async def test_a_delay_is_interrupted_by_cancellation():
    model = ScriptedModel([Step.of(text("start"), delay(60), text("never"))])
    seen: list[object] = []
    started = asyncio.Event()

    async def consume() -> None:
        async for chunk in model.stream(ask()):
            seen.append(chunk)
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert seen == [TextDelta("start")]


async def test_delay_step_waits_then_plays_what_follows():
    model = ScriptedModel([Step.delay(0.01, then=Step.text("late"))])
    chunks = await collect(model.stream(ask()))
    assert chunks[0] == TextDelta("late")


async def test_a_callable_step_reacts_to_what_the_engine_sent():
    def correct(request: ModelRequest) -> Step:
        last = request.messages[-1]
        assert isinstance(last, ToolResultMessage) and last.is_error
        return Step.tool_calls(call("get_weather", {"city": "Paris"}, id="c2"))

    model = ScriptedModel(
        [Step.tool_calls(call("get_weather", {"town": 1}, id="c1")), Step.respond(correct)]
    )
    await collect(model.stream(ask()))
    retry = ModelRequest(
        system="",
        messages=[
            *ask().messages,
            ToolResultMessage("c1", "get_weather", "city: field required", is_error=True),
        ],
    )
    chunks = await collect(model.stream(retry))
    assert [c.call.arguments for c in chunks if isinstance(c, ToolCallChunk)] == [{"city": "Paris"}]


async def test_a_callable_may_return_plain_parts():
    model = ScriptedModel([Step.respond(lambda request: text(f"echo {request.messages[0].text}"))])
    chunks = await collect(model.stream(ask("ping")))
    assert chunks[0] == TextDelta("echo ping")


async def test_running_out_of_steps_is_a_clear_error():
    model = ScriptedModel([Step.text("only")])
    await collect(model.stream(ask()))
    with pytest.raises(ModelError, match="ran out of steps: it was given 1, and this is call #2"):
        await collect(model.stream(ask()))


async def test_default_call_ids_are_unique():
    first, second = call("a"), call("a")
    assert first.call.id != second.call.id
