"""The local dispatcher: `drain` waits for every dispatched turn and then returns."""

from __future__ import annotations

import asyncio

from agentkit.engine.dispatch import LocalDispatcher


class Instant:
    """Turns that end without ever waiting."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run_turn(self, session_id: str, turn_id: str) -> None:
        self.ran.append(turn_id)


async def test_drain_returns_when_a_turn_ended_but_its_callbacks_have_not_run() -> None:
    # The turn's task runs on the loop's next pass and ends there; this coroutine resumes
    # on the same pass, before the task's done callbacks run. A gather of finished tasks
    # does not yield to the loop (3.12), so a drain that waited for those callbacks to
    # forget the task would spin here for ever.
    service = Instant()
    dispatcher = LocalDispatcher(service)
    await dispatcher.dispatch("ses_x", "turn_1")
    await asyncio.sleep(0)
    assert service.ran == ["turn_1"]
    await dispatcher.drain()
    assert dispatcher.running == 0
