"""The `Dispatcher` port: hands a turn to whatever runs it (an asyncio task locally,
an asynchronous Lambda invocation on AWS)."""

from __future__ import annotations

from typing import Protocol


class Dispatcher(Protocol):
    async def dispatch(self, session_id: str, turn_id: str) -> None:
        """Arrange for `AgentService.run_turn(session_id, turn_id)` to run soon."""
        ...
