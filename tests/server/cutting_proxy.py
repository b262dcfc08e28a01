"""A TCP forwarder that loses responses: it forwards the request, waits for the server to
start answering, then closes the client's connection without passing the answer on. The
server did the work; the client sees a dropped connection (a lost response)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.fixtures.tcp_forwarder import TcpForwarder


class CuttingProxy(TcpForwarder):
    """While `cutting` is set, every response is dropped; `cut` counts the drops."""

    def __init__(self, target_port: int) -> None:
        super().__init__(target_port)
        self.cutting = True
        self.cut = 0

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.cutting:
            await super()._pipe(reader, writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def forward_request() -> None:
            with contextlib.suppress(OSError):
                while data := await reader.read(65536):
                    up_writer.write(data)
                    await up_writer.drain()

        forwarding = asyncio.ensure_future(forward_request())
        # The first byte of the answer: the server has finished the request.
        with contextlib.suppress(OSError):
            await up_reader.read(1)
        self.cut += 1
        forwarding.cancel()
        for w in (writer, up_writer):
            with contextlib.suppress(OSError):
                w.close()


@pytest.fixture
def cutting_proxy() -> Iterator[Callable[[int], CuttingProxy]]:
    """`cutting_proxy(port)`: a response-dropping proxy to a local port, stopped at
    teardown."""
    started: list[CuttingProxy] = []

    def factory(target_port: int) -> CuttingProxy:
        proxy = CuttingProxy(target_port)
        proxy.start()
        started.append(proxy)
        return proxy

    yield factory
    for proxy in started:
        proxy.stop()


class HangUpProxy(TcpForwarder):
    """While `hanging_up` is set, forwards each request whole, then closes both connections
    before any answer: the client gave up mid-request, and the server sees it disconnect.
    `hung_up` is set once it did. Otherwise it forwards both ways; `forwarded` is set once
    a request went through.

    `at_work`, when given, blocks until the server is at work on the request (a test waits
    on the server's own signal of that). The proxy hangs up only then: uvicorn answers an
    app's first read of the body with a disconnect once the peer is gone, even a body it
    already holds, so a hang-up that comes too soon means the request never ran at all."""

    def __init__(self, target_port: int, at_work: Callable[[], object] | None = None) -> None:
        super().__init__(target_port)
        self.at_work = at_work
        self.hanging_up = True
        self.hung_up = threading.Event()
        self.forwarded = threading.Event()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.hanging_up:
            self.forwarded.set()
            await super()._pipe(reader, writer)
            return
        try:
            _up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length)
            up_writer.write(head + body)
            await up_writer.drain()
            if self.at_work is not None:
                await asyncio.to_thread(self.at_work)
        for w in (writer, up_writer):
            with contextlib.suppress(OSError):
                w.close()
        self.hung_up.set()
