"""`agentkit serve --dev`: reload an agent when files under its `agent/` folder change.

`watchfiles` (the watcher uvicorn's own `--reload` uses) reports changes; the folder is then
discovered again and, when it has no error diagnostics, handed to the host with
`LocalHost.reload`. Turns already running finish on the code they started with; turns that
start afterwards use the new code. Sessions are in the store and are not touched. An agent
folder with errors is reported and the previous code keeps serving.

Discovery runs on the event loop's thread, like the first one did: user modules are put in
`sys.modules` while they import, and doing that beside running turns from another thread
could mix two versions of `agent.lib`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from agentkit.hosts.local import LocalHost
from agentkit.project.bundle import AgentBundle

__all__ = ["DevReloader"]

log = logging.getLogger("agentkit.reload")


class DevReloader:
    """Watches each host's `agent/` folder; `start()` and `aclose()` fit the app's hooks."""

    def __init__(self, hosts: Sequence[LocalHost]) -> None:
        self.hosts = list(hosts)
        self.reloads = 0  # successful reloads, for tests and logs
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def reload_now(self, host: LocalHost) -> bool:
        """Discover `host`'s folder again and serve it if it is clean. True when swapped."""
        bundle = AgentBundle.discover(host.bundle.root)
        if host.reload(bundle):
            self.reloads += 1
            _say(f"agentkit: reloaded {host.slug}; new turns use the new code")
            return True
        errors = [d for d in bundle.manifest.diagnostics if d.severity == "error"]
        for d in errors:
            _say(f"error {d.path}: {d.message.splitlines()[0]} [{d.code}]")
        _say(
            f"agentkit: {host.slug} not reloaded ({len(errors)} error(s) above); "
            "still serving the previous code"
        )
        return False

    async def start(self) -> None:
        self._stop.clear()
        self._task = asyncio.create_task(self._watch(), name="agentkit-dev-reload")

    async def aclose(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _watch(self) -> None:
        from watchfiles import awatch

        folders = {self._agent_dir(h): h for h in self.hosts}
        async for changes in awatch(*folders, stop_event=self._stop):
            for host in _touched(folders, {path for _, path in changes}):
                self.reload_now(host)

    @staticmethod
    def _agent_dir(host: LocalHost) -> Path:
        return (Path(host.bundle.root) / "agent").resolve()


def _touched(folders: dict[Path, LocalHost], paths: set[str]) -> list[LocalHost]:
    """The hosts whose agent folder holds one of the changed `paths`."""
    changed = [Path(p).resolve() for p in paths]
    return [h for f, h in folders.items() if any(f == p or f in p.parents for p in changed)]


def _say(line: str) -> None:
    # Beside the server's banner on stderr, where the person editing is looking; and in the
    # log buffer (`/v1/logs`, the playground) through the logger.
    print(line, file=sys.stderr, flush=True)
    log.info("%s", line)
