"""Lambda execution environments: a pool of worker processes per function.

Each worker (`agentkit.emulator.worker_main`) imports its handler once and then runs one
invocation at a time, so warm invocations reuse the handler's host, loop and clients as on
Lambda, and a cold start is a new process. A function's timeout kills the worker's process,
as Lambda kills the environment; the next invocation starts a fresh one. This is why the
handlers run in child processes rather than in the emulator's own: a turn stuck in a tool,
a model call or a DynamoDB retry cannot be stopped from inside the process that runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.emulator.template import FunctionShape

log = logging.getLogger("agentkit.emulator.lambda")

# Lambda's init phase has its own limit; a loaded laptop needs longer than 10 s to import.
COLD_START_LIMIT = 120.0
_serials = itertools.count(1)


@dataclass(frozen=True, slots=True)
class InvokeResult:
    """How one invocation ended."""

    ok: bool
    payload: Any = None
    error_type: str = ""
    error_message: str = ""
    timed_out: bool = False
    duration: float = 0.0

    def error_payload(self) -> dict[str, Any]:
        """The `responsePayload` Lambda records for a failed invocation."""
        return {"errorType": self.error_type, "errorMessage": self.error_message}


class WorkerDied(RuntimeError):
    """The worker process ended without answering."""


class Worker:
    """One execution environment (a child process) of one function."""

    def __init__(self, shape: FunctionShape, env: Mapping[str, str]) -> None:
        self.shape = shape
        self.serial = next(_serials)
        self._env = dict(env)
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.StreamReader | None = None
        self._write_fd = -1

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentkit.emulator.worker_main",
            self.shape.handler,
            str(child_in),
            str(child_out),
            str(self.serial),
            pass_fds=(child_in, child_out),
            env=self._env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=2,  # the function's log goes where the emulator's does
        )
        os.close(child_in)
        os.close(child_out)
        self._write_fd = parent_out
        loop = asyncio.get_running_loop()
        self._reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        protocol = asyncio.StreamReaderProtocol(self._reader)
        await loop.connect_read_pipe(lambda: protocol, os.fdopen(parent_in, "rb", 0))
        try:
            ready = await asyncio.wait_for(self._reader.readline(), COLD_START_LIMIT)
        except TimeoutError:
            ready = b""
        if not ready:
            await self.kill()
            raise WorkerDied(f"{self.shape.name} did not start")

    async def invoke(
        self, event: Any, *, kill_after: float | None = None, request_id: str | None = None
    ) -> InvokeResult:
        """Run one invocation; the function's timeout (or `kill_after`, a chaos fault)
        kills the process. `request_id` is the context's `aws_request_id` (a new one if not
        given; Lambda's retries of one asynchronous event keep theirs)."""
        assert self._reader is not None
        started = time.monotonic()
        request = {
            "event": event,
            "deadline": time.time() + self.shape.timeout,
            "requestId": request_id or str(uuid.uuid4()),
        }
        data = json.dumps(request).encode("utf-8") + b"\n"
        limit = self.shape.timeout if kill_after is None else min(kill_after, self.shape.timeout)
        try:
            await asyncio.wait_for(asyncio.to_thread(self._write_all, data), limit)
            line = await asyncio.wait_for(
                self._reader.readline(), max(0.0, limit - (time.monotonic() - started))
            )
        except asyncio.CancelledError:
            # The caller gave up (API Gateway's integration timeout): this environment is
            # mid-invocation and would answer the next request with this one's reply.
            await self.kill()
            raise
        except (TimeoutError, OSError) as exc:
            await self.kill()
            took = time.monotonic() - started
            if not isinstance(exc, TimeoutError):  # TimeoutError is an OSError too
                return InvokeResult(False, None, "Runtime.ExitError", str(exc), duration=took)
            return InvokeResult(
                False,
                None,
                "Sandbox.Timedout",
                f"Task timed out after {took:.2f} seconds",
                timed_out=True,
                duration=took,
            )
        took = time.monotonic() - started
        if not line:
            await self.kill()
            return InvokeResult(False, None, "Runtime.ExitError", "worker exited", duration=took)
        reply = json.loads(line)
        if reply.get("ok"):
            return InvokeResult(True, reply.get("result"), duration=took)
        return InvokeResult(
            False,
            None,
            str(reply.get("errorType") or "Error"),
            str(reply.get("errorMessage") or ""),
            duration=took,
        )

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._write_fd, view)
            view = view[written:]

    async def kill(self) -> None:
        """End the environment at once (SIGKILL), as Lambda does on a timeout."""
        if self._write_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._write_fd)
            self._write_fd = -1
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            await self._proc.wait()

    async def stop(self) -> None:
        """End the environment after its current invocation (closing its request pipe)."""
        if self._write_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._write_fd)
            self._write_fd = -1
        if self._proc is not None and self._proc.returncode is None:
            try:
                await asyncio.wait_for(self._proc.wait(), 5)
            except TimeoutError:
                await self.kill()


class FunctionPool:
    """The warm environments of one function, at most `concurrency` at a time."""

    def __init__(self, shape: FunctionShape, env: Mapping[str, str], concurrency: int) -> None:
        self.shape = shape
        self._env = dict(env)
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self.invocations = 0
        self.cold_starts = 0

    async def warm(self) -> None:
        """Start one environment ahead of the first invocation."""
        worker = await self._spawn()
        self._idle.append(worker)

    async def _spawn(self) -> Worker:
        worker = Worker(self.shape, self._env)
        self._all.add(worker)
        self.cold_starts += 1
        await worker.start()
        return worker

    async def invoke(
        self, event: Any, *, kill_after: float | None = None, request_id: str | None = None
    ) -> InvokeResult:
        async with self._slots:
            self.invocations += 1
            worker = None
            while self._idle and worker is None:
                candidate = self._idle.pop()
                worker = candidate if candidate.alive else None
            try:
                if worker is None:
                    worker = await self._spawn()
            except WorkerDied as exc:
                return InvokeResult(False, None, "Runtime.InitError", str(exc))
            result = await worker.invoke(event, kill_after=kill_after, request_id=request_id)
            if worker.alive:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
            return result

    async def aclose(self) -> None:
        workers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(w.stop() for w in workers), return_exceptions=True)
