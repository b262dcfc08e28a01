"""The protocol tests drive agentkit with each protocol's official client. The Node clients
live in `node/` (package.json and its lock); `make node-deps` installs them."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.http_server import Served, serve_in

NODE_DIR = Path(__file__).parent / "node"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("SKIPPED LOUDLY: node is not installed; the Node protocol clients cannot run")
    if not (NODE_DIR / "node_modules").is_dir():
        pytest.fail("the Node protocol clients are not installed: run `make node-deps`")
    return node


def start_node(script: str, *args: str) -> subprocess.Popen[str]:
    """Start one of the Node client scripts, for a test that talks to it as it runs."""
    return subprocess.Popen(
        [_node(), str(NODE_DIR / script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=NODE_DIR,
    )


def run_node(script: str, *args: str, timeout: float = 120) -> Any:
    """Run one of the Node client scripts; its stdout is one JSON value."""
    done = subprocess.run(
        [_node(), str(NODE_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=NODE_DIR,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


ALICE, BOB = "alice-protocol-token", "bob-protocol-token"


@pytest.fixture(scope="module")
def bearer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server two bearer principals share, to show neither reaches the other's threads."""
    served = serve_in(
        tmp_path_factory.mktemp("bearer"), "--bearer-token", ALICE, "--bearer-token", BOB
    )
    yield served
    served.stop()
