from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.common import SleepRecorder
from tests.models.replay import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    try:
        yield replay
    finally:
        replay.stop()


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
