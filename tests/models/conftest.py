from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.replay import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    try:
        yield replay
    finally:
        replay.stop()


class SleepRecorder:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
