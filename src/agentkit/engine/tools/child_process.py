"""Run one child process in its own process group, with a timeout and capped output.

Agent-execution tools run through here. The child is the leader of a new session (so of a
new process group); whatever ends the call (a normal exit, the timeout, an output over the
cap, the awaiting task being cancelled, or the interpreter exiting) kills the whole group,
so nothing the tool started outlives it. Output is read as it arrives: stdout up to a cap
(more is an error, never an out-of-memory), stderr as a short tail for error messages.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

READ_CHUNK = 64 * 1024
# Process groups started here and not yet known to be gone: killed at interpreter exit.
_LIVE_GROUPS: set[int] = set()


@dataclass(frozen=True, slots=True)
class ChildResult:
    """How a child ended: its exit code (None when killed by us) and what it printed."""

    returncode: int | None
    stdout: bytes
    stderr_tail: str
    timed_out: bool = False
    overflowed: bool = False


class _Overflow(Exception):
    """stdout went past the cap."""


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group (quietly: it may already be gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    _LIVE_GROUPS.discard(pgid)


def kill_all_groups() -> None:
    """Kill every child group still running (at shutdown)."""
    for pgid in list(_LIVE_GROUPS):
        kill_group(pgid)


atexit.register(kill_all_groups)


async def run_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes,
    timeout: float,
    max_stdout: int,
    stderr_tail: int,
) -> ChildResult:
    """Run `argv` to completion (or until the timeout or the cap) and collect its output."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: one signal reaches everything
    )
    pgid = proc.pid
    _LIVE_GROUPS.add(pgid)
    out = bytearray()
    tail = bytearray()
    io = [
        asyncio.ensure_future(_feed(proc.stdin, stdin)),
        asyncio.ensure_future(_read_capped(proc.stdout, out, max_stdout)),
        asyncio.ensure_future(_read_tail(proc.stderr, tail, stderr_tail)),
    ]
    try:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*io)
            await proc.wait()
    except TimeoutError:
        return await _ended(proc, pgid, io, out, tail, timed_out=True)
    except _Overflow:
        return await _ended(proc, pgid, io, out, tail, overflowed=True)
    finally:
        # Also on cancellation: the group dies before the cancellation goes on.
        kill_group(pgid)
        for task in io:
            task.cancel()
    return ChildResult(proc.returncode, bytes(out), tail.decode(errors="replace"))


async def _ended(
    proc: asyncio.subprocess.Process,
    pgid: int,
    io: Sequence[asyncio.Future[None]],
    out: bytearray,
    tail: bytearray,
    *,
    timed_out: bool = False,
    overflowed: bool = False,
) -> ChildResult:
    kill_group(pgid)
    for task in io:
        task.cancel()
    await asyncio.gather(*io, return_exceptions=True)
    # A reader that stopped at the cap leaves its pipe paused and full; `wait()` also waits
    # for the pipes to close, so read what is left (discarded) until the dead child's EOF.
    await asyncio.gather(_discard(proc.stdout), _discard(proc.stderr))
    await proc.wait()
    return ChildResult(
        None, bytes(out), tail.decode(errors="replace"), timed_out=timed_out, overflowed=overflowed
    )


async def _discard(reader: asyncio.StreamReader | None) -> None:
    if reader is None:
        return
    with contextlib.suppress(Exception):
        while await reader.read(READ_CHUNK):
            pass


async def _feed(writer: asyncio.StreamWriter | None, data: bytes) -> None:
    if writer is None:
        return
    # A child that exits without reading its input is not an error here.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        writer.write(data)
        await writer.drain()
        writer.close()
        await writer.wait_closed()


async def _read_capped(reader: asyncio.StreamReader | None, into: bytearray, cap: int) -> None:
    if reader is None:
        return
    while chunk := await reader.read(READ_CHUNK):
        into.extend(chunk)
        if len(into) > cap:
            raise _Overflow()


async def _read_tail(reader: asyncio.StreamReader | None, into: bytearray, keep: int) -> None:
    if reader is None:
        return
    while chunk := await reader.read(READ_CHUNK):
        into.extend(chunk)
        if len(into) > keep:
            del into[:-keep]
