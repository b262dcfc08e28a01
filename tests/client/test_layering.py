"""The client speaks HTTP only: importing it loads no server, engine, store or uvicorn; and
importing `agentkit` does not load the embedded server until `agentkit.serve` is used."""

from __future__ import annotations

import json
import subprocess
import sys

import agentkit.client

FORBIDDEN = ("agentkit.server", "agentkit.engine", "agentkit.store", "agentkit.hosts", "uvicorn")


def loaded_after(code: str) -> set[str]:
    probe = f"{code}; import sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_client_imports_no_server_side_code() -> None:
    loaded = loaded_after("import agentkit.client")
    assert not [m for m in loaded if m.startswith(FORBIDDEN)]


def test_agentkit_serve_is_loaded_on_first_use() -> None:
    assert "agentkit.hosts.embedded" not in loaded_after("import agentkit")
    assert "agentkit.hosts.embedded" in loaded_after("import agentkit; agentkit.serve")


def test_the_client_exports() -> None:
    assert agentkit.client.__all__ == sorted(set(agentkit.client.__all__))
    for name in agentkit.client.__all__:
        assert getattr(agentkit.client, name).__doc__, name
