"""The `Dispatcher` port: hands a turn to whatever runs it (an asyncio task locally,
an asynchronous Lambda invocation on AWS)."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

log = logging.getLogger("agentkit.engine.dispatch")


class Dispatcher(Protocol):
    async def dispatch(self, session_id: str, turn_id: str) -> None:
        """Arrange for `AgentService.run_turn(session_id, turn_id)` to run soon."""
        ...


class TurnRunnerService(Protocol):
    async def run_turn(self, session_id: str, turn_id: str) -> None: ...


class LocalDispatcher:
    """Runs each dispatched turn as an asyncio task in this process.

    Task failures are logged (the turn loop records its own failures as events).
    `drain()` waits until no dispatched turn is running (CLI and tests use it).
    """

    def __init__(self, service: TurnRunnerService) -> None:
        self.service = service
        self._tasks: set[asyncio.Task[None]] = set()

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        task = asyncio.create_task(self._run(session_id, turn_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, session_id: str, turn_id: str) -> None:
        try:
            await self.service.run_turn(session_id, turn_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("turn %s of session %s crashed", turn_id, session_id)

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for every dispatched turn, including ones dispatched while waiting."""
        while self._tasks:
            tasks = list(self._tasks)
            await asyncio.gather(*tasks, return_exceptions=True)
            # Forgotten here too, not only by their done callbacks: those run on a later
            # pass of the loop, and a gather of finished tasks never yields to it (3.12).
            self._tasks.difference_update(tasks)

    async def close(self) -> None:
        """Cancel turns still running (the lease expiry and recovery handle the rest)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
