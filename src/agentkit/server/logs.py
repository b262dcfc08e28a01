"""A ring buffer of recent log lines, served by `GET /v1/logs?after=N`.

Each line gets a sequence number; clients poll with the last number they saw and get only
newer lines. When the buffer wraps, the oldest lines are gone and `after` still works.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from agentkit.events import iso_utc


@dataclass(frozen=True, slots=True)
class LogEntry:
    seq: int
    at: str
    level: str
    logger: str
    message: str


class LogBuffer(logging.Handler):
    """A logging handler that keeps the last `capacity` formatted records."""

    def __init__(self, capacity: int = 2000) -> None:
        super().__init__(level=logging.INFO)
        self._lines: deque[LogEntry] = deque(maxlen=capacity)
        self._seq = 0
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[0] is not None:
                message += f" ({record.exc_info[0].__name__}: {record.exc_info[1]})"
        except Exception:  # a bad format string must never break the caller
            message = str(record.msg)
        at = iso_utc(datetime.fromtimestamp(record.created, UTC))
        with self._guard:
            self._seq += 1
            self._lines.append(LogEntry(self._seq, at, record.levelname, record.name, message))

    @property
    def last_seq(self) -> int:
        return self._seq

    def after(self, seq: int, limit: int = 500) -> list[LogEntry]:
        with self._guard:
            newer = [e for e in self._lines if e.seq > seq]
        return newer[:limit]

    def attach(self, *logger_names: str) -> None:
        """Start collecting from these loggers (idempotent)."""
        for name in logger_names:
            target = logging.getLogger(name)
            if self not in target.handlers:
                target.addHandler(self)
            if target.level == logging.NOTSET or target.level > logging.INFO:
                target.setLevel(logging.INFO)

    def detach(self, *logger_names: str) -> None:
        for name in logger_names:
            logging.getLogger(name).removeHandler(self)
