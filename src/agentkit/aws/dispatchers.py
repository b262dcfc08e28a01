"""How a Lambda-hosted agent hands a turn on: an asynchronous invocation of TurnFunction,
or, under `sam local` (which has no asynchronous invoke), the turn run before returning."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol, runtime_checkable


class RunsTurns(Protocol):
    """What the inline dispatcher runs on (an `AwsHost`)."""

    async def run_turn(self, session_id: str, turn_id: str) -> object: ...

    async def run_eval(self, run_id: str) -> object: ...


@runtime_checkable
class DispatchesEvals(Protocol):
    """A dispatcher that can hand an eval run on too (both of this module's can)."""

    async def dispatch_eval(self, run_id: str) -> None: ...


class LambdaDispatcher:
    """Hands a turn to TurnFunction with an asynchronous (`Event`) invocation."""

    def __init__(self, client: Any, function_name: str) -> None:
        if not function_name:
            raise ValueError("LambdaDispatcher needs the turn function's name")
        self._client = client
        self._function = function_name

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        await self._invoke(turn_payload(session_id, turn_id))

    async def dispatch_eval(self, run_id: str) -> None:
        """Hand an eval run to TurnFunction (see `agentkit.aws.eval_runs`)."""
        from agentkit.aws.eval_runs import eval_run_payload

        await self._invoke(eval_run_payload(run_id))

    async def _invoke(self, payload: str) -> None:
        await asyncio.to_thread(
            self._client.invoke,
            FunctionName=self._function,
            InvocationType="Event",
            Payload=payload.encode("utf-8"),
        )


class InlineDispatcher:
    """Runs the turn before returning: `sam local` has no asynchronous invoke to hand it to."""

    def __init__(self) -> None:
        self.host: RunsTurns | None = None

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        if self.host is not None:
            await self.host.run_turn(session_id, turn_id)

    async def dispatch_eval(self, run_id: str) -> None:
        if self.host is not None:
            await self.host.run_eval(run_id)


def turn_payload(session_id: str, turn_id: str) -> str:
    """The event TurnFunction receives; with tracing on, the caller's trace context rides
    along (`traceContext`), so the turn joins the request's trace (docs/observability.md)."""
    from agentkit.engine.trace_context import TRACE_CONTEXT, carrier

    body: dict[str, Any] = {"sessionId": session_id, "turnId": turn_id}
    headers = carrier()
    if headers:
        body[TRACE_CONTEXT] = headers
    return json.dumps(body)
