"""Appends by other processes, told by the kernel: a watch on the file store's sessions.

Followers are woken at once by appends made in this process (`_notify`). Another process
appending to the same state folder (a CLI command, a second runtime) used to be noticed
only by each follower's `stat` of its `events.ndjson`, backing off to every few seconds: a
thousand quiet streams made a few hundred checks a second. While this watch runs, one
thread waits on the kernel's file notifications (inotify on Linux, through `watchfiles`)
for the whole folder and wakes the followers of each file that changed, so a follower
checks on its own only as a rare safety net.

A watch that cannot start (no `watchfiles`, the user's inotify instances used up, an
unsupported filesystem) or that stops (the folder removed) says so in `live`, and the
followers keep checking as before: the watch only ever makes noticing faster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("agentkit.store.files")

EVENTS_FILE = "events.ndjson"
# How long the kernel's notifications are gathered before followers are woken: an append
# by another process reaches them this much later at most.
STEP_MS = 20


class SessionsWatch:
    """One thread watching `folder` (recursively) and calling `changed(path)` for each
    `events.ndjson` written under it, until `stop`. Once the watch is in place (about a
    second after the start, when it first reports), `live` turns true and `ready()` is
    called: an append that came between a follower's last look and the watch's start
    would otherwise wait for that follower's next check."""

    def __init__(
        self, folder: Path, changed: Callable[[str], None], ready: Callable[[], None]
    ) -> None:
        self._folder = folder
        self._changed = changed
        self._ready = ready
        self._stop = threading.Event()
        self._live = False
        self._thread = threading.Thread(target=self._run, name="agentkit-file-watch", daemon=True)
        self._thread.start()

    @property
    def live(self) -> bool:
        """Whether appends by other processes are being told (else followers check)."""
        return self._live and not self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            from watchfiles import watch

            changes = watch(
                self._folder,
                watch_filter=lambda _change, path: path.endswith(EVENTS_FILE),
                debounce=STEP_MS * 4,
                step=STEP_MS,
                stop_event=self._stop,
                rust_timeout=1_000,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=False,
            )
            for batch in changes:
                if not self._live:  # the first report: the watch is in place
                    self._live = True
                    self._ready()
                for _change, path in batch:
                    self._changed(path)
        except Exception as exc:  # no watch: the followers' own checks carry on
            log.info("no file watch on %s (%s); followers check for appends", self._folder, exc)
        finally:
            self._live = False
