"""examples/pr-review's drive channel logs its deliveries through ctx.logger, so the lines
reach `GET /v1/logs` of a real `agentkit serve`."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.fixtures.http_server import Served, _env
from tests.server.helpers import read_stream, turn_ends

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pr-review"

pytestmark = pytest.mark.slow(reason="serves the pr-review example over HTTP")


def test_a_drive_delivery_line_reaches_the_logs_endpoint(tmp_path: Path) -> None:
    env = _env({"GITHUB_WEBHOOK_SECRET": "example-secret", "GITHUB_TOKEN": "ghs_example"})
    served = Served(EXAMPLE, tmp_path / "state", ["--mode", "single", "--dev"], env).start()
    try:
        with httpx.Client(timeout=30) as client:
            r = client.post(f"{served.url}/v1/channels/drive", json={"pr": 12})
            assert r.status_code == 200, r.text
            sid = r.json()["sessionId"]
            read_stream(client, served.url, sid, until=turn_ends())
            wanted = f"review reply for session {sid}"
            # Delivery runs after the turn is recorded: wait, bounded, for its line.
            deadline = time.monotonic() + 60
            while True:
                lines = client.get(f"{served.url}/v1/logs").json()["lines"]
                if any(wanted in str(line) for line in lines):
                    break
                assert time.monotonic() < deadline, (lines, served.output())
                read_stream(client, served.url, sid, window=0.05)
    finally:
        served.stop()
