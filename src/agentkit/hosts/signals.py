"""Stop signals for the HTTP servers we run (`agentkit serve`, an embedded server)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


@contextlib.contextmanager
def stop_signals_to(handle_exit: Callable[[int, FrameType | None], Any]) -> Iterator[None]:
    """SIGINT and SIGTERM call `handle_exit` inside the block, the handlers before it come
    back after. Off the main thread (where no handler can be set) nothing changes.

    In place of uvicorn's own handling, which re-raises the signal after a graceful
    shutdown (exit status -2 and a KeyboardInterrupt traceback)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM)
    original = {sig: signal.signal(sig, handle_exit) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in original.items():
            signal.signal(sig, handler)
