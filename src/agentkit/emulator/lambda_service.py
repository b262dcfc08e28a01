"""Lambda's invoke API, synchronous and asynchronous, over the function pools.

An asynchronous invoke (`InvocationType=Event`, what TurnFunction's dispatcher and
Scheduler send) is accepted at once and delivered at least once: a failed or timed-out
invocation is retried after the function's retry delays (Lambda waits about one and then
two minutes; `retry_delays` scales them for a laptop), up to `MaximumRetryAttempts` of the
template. When the retries run out, TurnFunction's request goes to its on-failure
destination, SchedulerFunction, as the destination record Lambda sends; any other function's
is kept in `dead_letters` (the stack's failure queues).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentkit.emulator.background import Activity
from agentkit.emulator.chaos import Chaos
from agentkit.emulator.functions import FunctionPool, InvokeResult

log = logging.getLogger("agentkit.emulator.lambda")

# Invocations of these may be killed by a `timeout` fault; the API's are not (a killed API
# invocation is a 503 the client sees, not a delivery the stack retries).
TIMEOUT_TARGETS = ("TurnFunction", "HooksFunction", "SchedulerFunction")
ON_FAILURE = {"TurnFunction": "SchedulerFunction"}


@dataclass(slots=True)
class LambdaService:
    """The functions of the stack by logical id, and their asynchronous queue."""

    pools: Mapping[str, FunctionPool]
    chaos: Chaos
    retry_delays: tuple[float, ...] = (60.0, 120.0)
    names: dict[str, str] = field(default_factory=dict)  # function name -> logical id
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    # Told when an invocation ends or an asynchronous delivery is done (`quiet` waits on it).
    activity: Activity = field(default_factory=Activity)
    last_finished: float = 0.0  # `time.monotonic()` when the last invocation ended
    _running: int = 0  # invocations under way, synchronous and asynchronous
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def logical_id(self, function_name: str) -> str | None:
        """The function a name, ARN or `name:qualifier` refers to."""
        name = function_name.rsplit(":function:", 1)[-1].split(":", 1)[0]
        return self.names.get(name) or (name if name in self.pools else None)

    async def invoke(
        self, function: str, event: Any, *, chaos: bool = True, request_id: str | None = None
    ) -> InvokeResult:
        """One synchronous invocation (a `timeout` fault may kill it)."""
        kill_after = None
        if chaos and function in TIMEOUT_TARGETS and self.chaos.roll("timeout", function):
            kill_after = self.chaos.uniform(0.05, 2.0)
        self._running += 1
        try:
            result = await self.pools[function].invoke(
                event, kill_after=kill_after, request_id=request_id
            )
        finally:
            self._running -= 1
            self.last_finished = time.monotonic()
            self.activity.changed()
        if not result.ok:
            log.warning("%s failed: %s %s", function, result.error_type, result.error_message[:300])
        return result

    def invoke_async(self, function: str, event: Any) -> None:
        """Accept an `Event` invocation: delivered at least once, retried on failure."""
        enqueued = time.time()
        self._spawn(self._deliver(function, event, enqueued))
        if self.chaos.roll("duplicate", f"{function} async invoke"):
            self._spawn(self._deliver(function, event, enqueued))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.activity.changed()

    async def _deliver(self, function: str, event: Any, enqueued: float) -> None:
        pool = self.pools[function]
        attempts = 1 + pool.shape.max_retries
        result: InvokeResult | None = None
        # Lambda's retries of one event keep its request id: SchedulerFunction's claim lets
        # the retry of an attempt that died take the firing over by it.
        request_id = str(uuid.uuid4())
        for attempt in range(attempts):
            if time.time() - enqueued > pool.shape.max_event_age:
                condition = "EventAgeExceeded"
                break
            result = await self.invoke(function, event, request_id=request_id)
            if result.ok:
                return
            if attempt + 1 < attempts:
                delays = self.retry_delays or (0.0,)
                await asyncio.sleep(delays[min(attempt, len(delays) - 1)])
        else:
            condition = "RetriesExhausted"
        await self._on_failure(function, event, result, condition, attempts)

    async def _on_failure(
        self,
        function: str,
        event: Any,
        result: InvokeResult | None,
        condition: str,
        attempts: int,
    ) -> None:
        record = destination_record(function, event, result, condition, attempts)
        target = ON_FAILURE.get(function)
        if target is None:
            log.error("%s gave up on an event (%s); kept as a dead letter", function, condition)
            self.dead_letters.append(record)
            return
        log.error("%s gave up on an event (%s); sent to %s", function, condition, target)
        self.invoke_async(target, record)

    async def drain(self) -> None:
        """Wait until no asynchronous delivery is in flight."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    @property
    def busy(self) -> bool:
        """Whether an invocation runs or an asynchronous delivery (or its retry) is pending."""
        return bool(self._running or self._tasks)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)


def destination_record(
    function: str, event: Any, result: InvokeResult | None, condition: str, attempts: int
) -> dict[str, Any]:
    """The record Lambda sends an on-failure destination of an asynchronous invoke."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{function}:$LATEST",
            "condition": condition,
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": result.error_payload() if result is not None else None,
    }


def lambda_api(
    service: LambdaService,
    cfn_responses: list[dict[str, Any]],
    quiet: Callable[[float], Awaitable[bool]] | None = None,
) -> Any:
    """The Lambda `Invoke` HTTP API (what boto3's lambda client calls), the URL the
    schedule reconciler answers CloudFormation on, and, with `quiet`, the emulator's own
    `GET /emulator/quiet?timeout=S`: answers once nothing is running or pending
    (`{"quiet": true}`), or after S seconds (`{"quiet": false}`)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def invoke(request: Request) -> Response:
        function = service.logical_id(request.path_params["name"])
        if function is None:
            return JSONResponse(
                {"Type": "User", "Message": "Function not found"},
                status_code=404,
                headers={"x-amzn-ErrorType": "ResourceNotFoundException"},
            )
        body = await request.body()
        try:
            event = json.loads(body or b"{}")
        except ValueError:
            return JSONResponse(
                {"Type": "User", "Message": "Could not parse request body into json"},
                status_code=400,
                headers={"x-amzn-ErrorType": "InvalidRequestContentException"},
            )
        kind = request.headers.get("x-amz-invocation-type", "RequestResponse")
        if kind == "Event":
            service.invoke_async(function, event)
            return Response(status_code=202)
        result = await service.invoke(function, event)
        headers = {"x-amz-executed-version": "$LATEST"}
        if not result.ok:
            headers["x-amz-function-error"] = "Unhandled"
            return JSONResponse(result.error_payload(), headers=headers)
        return JSONResponse(result.payload, headers=headers)

    async def cfn_response(request: Request) -> Response:
        cfn_responses.append(json.loads(await request.body()))
        return Response(status_code=200)

    async def wait_quiet(request: Request) -> Response:
        try:
            timeout = float(request.query_params.get("timeout", "30"))
        except ValueError:
            timeout = 30.0
        reached = quiet is not None and await quiet(max(0.0, min(timeout, 300.0)))
        return JSONResponse({"quiet": reached})

    return Starlette(
        routes=[
            Route("/2015-03-31/functions/{name:path}/invocations", invoke, methods=["POST"]),
            Route("/cloudformation-response", cfn_response, methods=["PUT"]),
            Route("/emulator/quiet", wait_quiet, methods=["GET"]),
        ]
    )
