"""Drive sessions through a running emulator under `--chaos` and check the promises:
every session settles with gap-free indexes, no tool side effect runs twice, hooks see every
event at least once, and each reminder fires once. Shared by the chaos test and the bench.
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agentkit.engine.turn.closed_calls import IN_DOUBT
from tests.emulator.helpers import Emulated, StandIn

SETTLED = ("idle", "completed", "failed")
_REMINDER_ID = re.compile(r"rem_[A-Za-z0-9_-]+")


@dataclass
class Outcome:
    """What the checks found, summed over sessions."""

    sessions: int = 0
    events: int = 0
    gaps: list[str] = field(default_factory=list)
    effects: int = 0
    effects_twice: list[str] = field(default_factory=list)
    hook_misses: list[str] = field(default_factory=list)
    reminders_armed: int = 0
    reminders_fired: int = 0
    reminders_twice: list[str] = field(default_factory=list)
    failed_turns: int = 0
    unsettled: list[str] = field(default_factory=list)  # "id: status" of each one

    @property
    def settled(self) -> int:
        return self.sessions - len(self.unsettled)

    def problems(self) -> list[str]:
        found = []
        if self.unsettled:
            found.append(f"{len(self.unsettled)} session(s) never settled: {self.unsettled}")
        found += [f"index gap: {g}" for g in self.gaps]
        found += [f"effect ran twice: {k}" for k in self.effects_twice]
        found += [f"hooks missed: {m}" for m in self.hook_misses]
        found += [f"reminder fired twice: {r}" for r in self.reminders_twice]
        if self.reminders_fired < self.reminders_armed:
            found.append(f"{self.reminders_armed - self.reminders_fired} reminder(s) never fired")
        return found


class Board:
    """Every session's status from one listing, shared by the threads that drive them.

    A listing folds every session's status (a read of each one's stream), so a listing per
    question makes a run of N sessions cost N^2 reads; one listing per `every` seconds,
    whoever asks, keeps it at N per look. A question asked after an action (an approval, a
    follow-up) is answered from a listing begun after it, never an older one."""

    def __init__(self, server: Emulated, every: float = 0.3) -> None:
        self._server = server
        self._every = every
        self._lock = threading.Lock()
        self._began = float("-inf")
        self._seen: dict[str, str] = {}

    def snapshot(self, since: float) -> dict[str, str]:
        """Statuses by id, from a listing begun at or after `since` (`time.monotonic()`)."""
        with self._lock:
            if self._began < since or time.monotonic() - self._began >= self._every:
                began = time.monotonic()
                self._seen = self._server.statuses()
                self._began = began
            return self._seen

    def status(self, session_id: str, since: float) -> str:
        return self.snapshot(since).get(session_id, "unknown")


def _wait_settled(board: Board, session_id: str, since: float, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    status = "unknown"
    while time.monotonic() < deadline:
        status = board.status(session_id, since)
        if status in (*SETTLED, "awaiting_approval"):
            return status
        time.sleep(0.3)
    return status


def _call_retrying(server: Emulated, method: str, path: str, body: Any) -> tuple[int, Any]:
    """As a client of a deployed API does: 429 and 5xx are retried with a backoff."""
    code, answer = 0, None
    for attempt in range(6):
        code, answer = server.call(method, path, body)
        if code != 429 and code < 500:
            break
        time.sleep(0.2 * 2**attempt)
    return code, answer


def drive_session(server: Emulated, board: Board, timeout: float) -> str | None:
    """One conversation: a tool needing approval (approved), then a reminder."""
    since = time.monotonic()
    code, started = _call_retrying(server, "POST", "/v1/session", {"message": "deploy it"})
    if code != 200:
        return None
    session_id = str(started["sessionId"])
    token = started["continuationToken"]
    status = _wait_settled(board, session_id, since, timeout)
    if status == "awaiting_approval":
        since = time.monotonic()
        _approve_all(server, session_id)
        status = _wait_settled(board, session_id, since, timeout)
    if status in SETTLED:
        since = time.monotonic()
        code, _ = server.call(
            "POST",
            f"/v1/session/{session_id}",
            {"message": "remind me", "continuationToken": token},
        )
        if code == 200:
            _wait_settled(board, session_id, since, timeout)
    return session_id


def _approve_all(server: Emulated, session_id: str) -> None:
    _, pending = server.call("GET", f"/v1/session/{session_id}/approvals")
    for approval in pending.get("approvals", []):
        server.call(
            "POST",
            f"/v1/session/{session_id}/approvals/{approval['callId']}",
            {"decision": "approve"},
        )


def _reminders(events: list[dict[str, Any]]) -> tuple[set[str], int, int]:
    """The reminders a session's tools armed, how many reminder messages came back, and
    how many `remind_me` calls were cut off while running (a killed turn: each may have
    armed its reminder before it died, so it may fire once, or not at all)."""
    armed = {
        m
        for e in events
        if e["type"] != "message.received"
        for m in _REMINDER_ID.findall(json.dumps(e.get("data")))
    }
    fired = sum(
        1
        for e in events
        if e["type"] == "message.received" and e["data"].get("source") == "reminder"
    )
    reminding = {
        call["callId"]
        for e in events
        if e["type"] == "actions.requested"
        for call in e["data"].get("actions", [])
        if call.get("toolName") == "remind_me"
    }
    in_doubt = sum(
        1
        for e in events
        if e["type"] == "action.result"
        and e["data"].get("callId") in reminding
        and e["data"].get("error") == IN_DOUBT
    )
    return armed, fired, in_doubt


def _quiet(server: Emulated, board: Board, session_ids: list[str], deadline: float) -> None:
    """Until every session is settled and every armed reminder has come back. A session
    that got there is not read again: a duplicate firing after it is what `check` finds."""
    pending = set(session_ids)
    while pending and time.monotonic() < deadline:
        statuses = board.snapshot(time.monotonic())
        for session_id in sorted(pending):
            status = statuses.get(session_id, "unknown")
            if status == "awaiting_approval":
                _approve_all(server, session_id)
            if status not in SETTLED:
                continue
            armed, fired, _ = _reminders(server.events(session_id))
            if fired >= len(armed):
                pending.discard(session_id)
        if pending:
            time.sleep(0.5)


class _HookLog:
    """The (session, index) pairs the hook has logged, read again only while one is missing."""

    def __init__(self, server: Emulated) -> None:
        self._server = server
        self.seen: set[tuple[str, int]] = set()

    def missed(self, wanted: set[tuple[str, int]], deadline: float) -> list[int]:
        while not wanted <= self.seen and time.monotonic() < deadline:
            self.seen = {(c["sessionId"], c["index"]) for c in self._server.hook_calls()}
            if not wanted <= self.seen:
                time.sleep(0.3)
        return sorted(i for _, i in wanted - self.seen)


def check(server: Emulated, standin: StandIn, session_ids: list[str], timeout: float) -> Outcome:
    """Wait for the stack to go quiet, then check every promise."""
    out = Outcome(sessions=len(session_ids))
    board = Board(server)
    _quiet(server, board, session_ids, time.monotonic() + timeout)
    # A duplicate firing or delivery, had there been one, has landed once the emulator has
    # nothing running or pending: it says when.
    assert server.wait_quiet(timeout), "the emulator never went quiet"
    statuses = board.snapshot(time.monotonic())
    hooks = _HookLog(server)
    hook_deadline = time.monotonic() + 30
    for session_id in session_ids:
        events = server.events(session_id)
        out.events += len(events)
        status = statuses.get(session_id, "unknown")
        if status not in SETTLED:
            out.unsettled.append(f"{session_id}: {status}")
        indexes = [e["index"] for e in events]
        if indexes != list(range(len(indexes))):
            out.gaps.append(f"{session_id}: {indexes}")
        out.failed_turns += sum(1 for e in events if e["type"] == "turn.failed")
        armed, fired, in_doubt = _reminders(events)
        out.reminders_armed += len(armed)
        out.reminders_fired += min(fired, len(armed))
        if fired > len(armed) + in_doubt:
            out.reminders_twice.append(session_id)
        missed = hooks.missed({(session_id, i) for i in indexes}, hook_deadline)
        if missed:
            out.hook_misses.append(f"{session_id}: {missed}")
    with standin.lock:
        out.effects = sum(standin.effects.values())
        out.effects_twice = [k for k, n in standin.effects.items() if n > 1]
    return out


def run_sessions(
    server: Emulated, standin: StandIn, count: int, timeout: float, *, workers: int = 4
) -> Outcome:
    """`count` conversations, `workers` at a time, then the checks."""
    board = Board(server)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        ids = [
            s for s in pool.map(lambda _: drive_session(server, board, timeout), range(count)) if s
        ]
    return check(server, standin, ids, timeout)


def timeline(server: Emulated) -> str:
    """Each session's events in short, and the emulator's lines about reminders and
    schedules: what a failed run needs to be understood from its log alone."""
    lines: list[str] = []
    for session_id, status in sorted(server.statuses().items()):
        lines.append(f"{session_id} ({status}):")
        for e in server.events(session_id):
            data = e.get("data") or {}
            detail = {k: data[k] for k in ("source", "callId", "toolName", "error") if k in data}
            lines.append(f"  {e['index']} {e['at']} {e['type']} {json.dumps(detail)}")
    lines += [
        line for line in server.log_lines if re.search("remind|schedul|Scheduler|failed:", line)
    ]
    return "\n".join(lines)
