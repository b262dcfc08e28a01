"""The turns running in this process, and the stops asked of them: one owner for both.

A stop is seen by a running turn at its next safe point (`is_stopped`); a model blocked
mid-stream is cancelled at once (`stop` cancels the stream the turn registered). Turns in
other processes read the store's interrupt flag instead: this state is per process.
"""

from __future__ import annotations

import asyncio
from typing import Any


def stop_key(session_id: str, turn_id: str) -> str:
    """The stop entry that stops one turn of a session (a bare session id stops any)."""
    return f"{session_id}#{turn_id}"


class LocalTurns:
    """Per-process turn state: which turn runs here per session, stops, model streams."""

    __slots__ = ("_running", "_stops", "_streams")

    def __init__(self) -> None:
        self._running: dict[str, str] = {}  # session id -> the turn running here
        self._stops: set[str] = set()
        self._streams: dict[str, asyncio.Task[Any]] = {}

    def track(self, session_id: str, turn_id: str) -> None:
        """Mark the turn as running here (until `untrack`)."""
        self._running[session_id] = turn_id

    def untrack(self, session_id: str, turn_id: str) -> None:
        """The turn stopped running here: it and the stops asked of it are forgotten."""
        self._running.pop(session_id, None)
        self._stops.discard(session_id)
        self._stops.discard(stop_key(session_id, turn_id))

    def runs_here(self, session_id: str) -> bool:
        """Whether a turn of the session runs in this process."""
        return session_id in self._running

    def stop(self, session_id: str, turn_id: str | None = None) -> None:
        """Ask the session's turn (only `turn_id`, when given) to stop, and cancel its model
        stream when that turn runs here."""
        if turn_id is None:
            self._stops.add(session_id)
        else:
            self._stops.add(stop_key(session_id, turn_id))
            if self._running.get(session_id) != turn_id:
                return
        stream = self._streams.get(session_id)
        if stream is not None:
            stream.cancel()  # a model blocked mid-stream stops now, not at its next chunk

    def is_stopped(self, session_id: str, turn_id: str) -> bool:
        """Whether a stop was asked for the session (any turn) or this turn."""
        stops = self._stops
        return bool(stops) and (session_id in stops or stop_key(session_id, turn_id) in stops)

    def forget_stop(self, session_id: str) -> None:
        """Drop a session-wide stop (one asked before a new message was meant for an
        earlier turn)."""
        self._stops.discard(session_id)

    def streaming(self, session_id: str, task: asyncio.Task[Any]) -> None:
        """Register the model stream a stop should cancel."""
        self._streams[session_id] = task

    def streamed(self, session_id: str) -> None:
        """The model stream of the session ended."""
        self._streams.pop(session_id, None)


__all__ = ["LocalTurns", "stop_key"]
