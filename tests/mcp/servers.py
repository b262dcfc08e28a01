"""Real MCP servers for the connection tests: `units_server.py` over stdio or HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

UNITS_SERVER = str(Path(__file__).with_name("units_server.py"))


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MCP server exited early with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("MCP server did not come up")


@dataclass
class HttpUnits:
    """`units_server.py http PORT` as a subprocess. Port 0 (the default) lets the server
    bind a port the kernel picks and report it; a restart comes back on the same port."""

    env: dict[str, str]
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> HttpUnits:
        self.proc = subprocess.Popen(
            [sys.executable, UNITS_SERVER, "http", str(self.port)],
            env={**os.environ, **self.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the bound port, or nothing if it failed
        if not line.strip().isdigit():
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"MCP server did not bind a port (exit {self.proc.returncode})")
        self.port = int(line)
        wait_for_port(self.port, self.proc)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
