"""Tiny Lambda handlers for the emulator's own tests (imported by worker processes)."""

from __future__ import annotations

import os
import time
from typing import Any


def sleepy(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Sleeps as long as asked; answers with its process id and the time it had left."""
    time.sleep(float(event.get("sleep", 0)))
    return {"pid": os.getpid(), "remainingMs": context.get_remaining_time_in_millis()}


def failing(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise RuntimeError("this function always fails")


def stuck(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Writes its request id to the file `event["log"]` names, then hangs until killed."""
    with open(event["log"], "a", encoding="utf-8") as log:
        log.write(context.aws_request_id + "\n")
    time.sleep(60)
    return {}
