"""Named places where a test can have the process killed with SIGKILL (test-only).

Off unless `AGENTKIT_TEST_CRASH_AT` names the point: crash tests set it on the process
they serve, to cut a request between two writes exactly where a real crash could. Never
set it anywhere else.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "AGENTKIT_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """Kill this process here (`kill -9`) when the test hook names `name`."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["CRASH_ENV", "crash_point"]
