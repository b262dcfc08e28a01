"""Lambda's execution model in the emulator: warm reuse, a timeout that kills the process,
and asynchronous invokes retried twice before their failure is kept."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agentkit.emulator.chaos import Chaos, ChaosSpec
from agentkit.emulator.functions import FunctionPool
from agentkit.emulator.lambda_service import LambdaService
from agentkit.emulator.template import FunctionShape

pytestmark = pytest.mark.timeout(120)


def pool(handler: str, timeout: float, name: str = "TurnFunction") -> FunctionPool:
    shape = FunctionShape(name, f"tests.emulator.handlers_for_tests.{handler}", timeout, 2)
    return FunctionPool(shape, dict(os.environ), concurrency=1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_warm_environment_is_reused_and_a_timeout_kills_it() -> None:
    functions = pool("sleepy", timeout=2.0)
    try:
        first = await functions.invoke({"sleep": 0})
        second = await functions.invoke({"sleep": 0})
        assert first.ok and second.ok
        assert first.payload["pid"] == second.payload["pid"]  # warm
        assert 0 < first.payload["remainingMs"] <= 2000

        stuck = await functions.invoke({"sleep": 30})
        assert stuck.timed_out
        assert stuck.error_type == "Sandbox.Timedout"
        assert stuck.duration < 10
        await asyncio.sleep(0.2)
        assert not alive(first.payload["pid"])  # killed, as Lambda ends the environment

        after = await functions.invoke({"sleep": 0})
        assert after.ok and after.payload["pid"] != first.payload["pid"]
        assert functions.cold_starts == 2
    finally:
        await functions.aclose()


async def test_an_async_invoke_is_retried_twice_then_kept_as_a_dead_letter() -> None:
    functions = pool("failing", timeout=10.0, name="HooksFunction")
    lambdas = LambdaService({"HooksFunction": functions}, Chaos(ChaosSpec()), retry_delays=(0, 0))
    try:
        lambdas.invoke_async("HooksFunction", {"n": 1})
        await lambdas.drain()
        assert functions.invocations == 3  # the first attempt and Lambda's two retries
        (record,) = lambdas.dead_letters
        assert record["requestPayload"] == {"n": 1}
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["responsePayload"]["errorType"] == "RuntimeError"
    finally:
        await functions.aclose()


async def test_retries_of_an_invocation_killed_by_chaos_keep_its_request_id(
    tmp_path: Path,
) -> None:
    # SchedulerFunction's claim lets Lambda's retry of an attempt that died take the firing
    # over by its request id; with a new id per retry a killed reminder firing was lost.
    functions = pool("stuck", timeout=10.0, name="SchedulerFunction")
    chaos = Chaos(ChaosSpec(timeout=1.0, seed=7))  # every invocation is killed part-way
    lambdas = LambdaService({"SchedulerFunction": functions}, chaos, retry_delays=(0, 0))
    log = tmp_path / "requests.log"
    try:
        lambdas.invoke_async("SchedulerFunction", {"log": str(log)})
        lambdas.invoke_async("SchedulerFunction", {"log": str(log)})  # another event
        await lambdas.drain()
    finally:
        await functions.aclose()
    ids = log.read_text(encoding="utf-8").split()
    assert chaos.counts["timeout"] == 6  # both events: the attempt and two retries, each cut
    assert len(ids) == 6
    assert sorted(ids.count(i) for i in set(ids)) == [3, 3]  # one id per event, kept


async def test_the_service_stays_busy_through_retry_delays_and_says_when_it_is_done() -> None:
    # What `GET /emulator/quiet` (the chaos driver's wait) stands on: a pending retry is
    # work still to come, even while no invocation runs.
    functions = pool("failing", timeout=10.0, name="HooksFunction")
    lambdas = LambdaService(
        {"HooksFunction": functions}, Chaos(ChaosSpec()), retry_delays=(0.3, 0.3)
    )
    try:
        assert not lambdas.busy
        lambdas.invoke_async("HooksFunction", {"n": 1})
        assert lambdas.busy
        busy_between_attempts = False
        while lambdas.busy:
            assert await lambdas.activity.wait(30), "no activity reported"
            busy_between_attempts |= lambdas.busy and functions.invocations < 3
        assert functions.invocations == 3 and len(lambdas.dead_letters) == 1
        assert busy_between_attempts  # it was still busy between attempts
    finally:
        await functions.aclose()
