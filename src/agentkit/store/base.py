"""The `Store` port: durable sessions, their event streams, leases, reminders, idempotency.

`Store` is the union of one protocol per role: `SessionStore`, `EventStore`, `LeaseStore`,
`ReminderStore`, `ClaimStore` and `EvalRunStore`. A component that needs one role asks for
that one; an adapter may implement them all in one class (every adapter here does). Each
role has its own contract suite in `tests/store/` (`test_<role>_store.py`), which every
adapter (memory, files, DynamoDB) passes. The rules every adapter keeps:

- `append` gives events the next indexes of their session, gap-free; concurrent appenders
  never share or skip an index, and a batch lands whole, in order, contiguously.
- `rotate_token` is a compare-and-set: of several rotations from one token, one wins.
- A lease has one holder until it expires; after expiry anyone may take it over.
- An append fenced by a lease holder lands only while that holder holds the lease.
- Deleting a session removes it from listings, reads and follows.
- Every id is validated before it touches a path or a key (`InvalidId`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentkit.events import Event, EventDraft
from agentkit.reminders import ReminderRecord
from agentkit.sessions import SessionRecord
from agentkit.store.listing import StartedWindow


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session's turn lease, and until when (epoch seconds)."""

    holder: str
    expires_at: float
    pid: int | None = None  # the holding process, where the store records it (files)


@dataclass(frozen=True, slots=True)
class Claim:
    """An idempotency claim: `started` while its first holder works on it (it lapses at
    `expires_at`, so a retry after a crash proceeds), then `done` or `failed`."""

    state: str
    expires_at: float
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing; pass `cursor` back to get the next one."""

    items: list[SessionRecord] = field(default_factory=list)
    cursor: str | None = None


@runtime_checkable
class SessionStore(Protocol):
    """Session records: creation, lookup, listing, deletion and the token's hash."""

    async def create_session(self, record: SessionRecord) -> None:
        """Store a new session; `SessionExists` if the id is taken."""

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None when it does not exist or was deleted."""

    async def list_sessions(
        self,
        principal: str | None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        """Sessions owned by `principal` (all sessions when None), newest first; with
        `started`, only those created inside that window (read by index, not filtered)."""

    async def find_session(self, channel_id: str, continuation_key: str) -> SessionRecord | None:
        """The session a channel-defined continuation key points at, if any."""

    async def touch_session(self, session_id: str) -> None:
        """Bump `updated_at`."""

    async def delete_session(self, session_id: str) -> bool:
        """Remove a session and its events. False if it did not exist."""

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        """Replace the token hash if it still equals `expected_hash`. True if this call won."""


@runtime_checkable
class EventStore(Protocol):
    """Each session's append-only, gap-free event stream."""

    async def append(
        self, session_id: str, drafts: Sequence[EventDraft], *, lease_holder: str | None = None
    ) -> list[Event]:
        """Append drafts with the next indexes; returns the recorded events.

        With `lease_holder`, the batch lands only while that holder still holds the
        session's lease (expired but not yet taken over counts as held), checked
        atomically with the write; otherwise `LeaseLost` and nothing is written: once
        another holder took the lease over, or it was released, a worker can never append
        to the turn it lost."""

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        """Events with index >= start, in order (at most `limit`)."""

    async def follow(self, session_id: str, start: int, timeout: float) -> list[Event]:
        """Like `read`, but waits up to `timeout` seconds for an event at `start` or later."""

    async def next_index(self, session_id: str) -> int:
        """The index the next appended event will get."""


@runtime_checkable
class LeaseStore(Protocol):
    """Each session's turn lease (one holder at a time) and its stop flag."""

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the lease if free, expired, or already held by `holder`."""

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Extend the lease; False if `holder` no longer holds it."""

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease up if `holder` holds it."""

    async def get_lease(self, session_id: str) -> Lease | None:
        """The current, unexpired lease, if any."""

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        """Raise or clear the session's interrupt flag."""

    async def request_interrupt(
        self, session_id: str, turn_id: str, *, token_hash: str | None = None
    ) -> bool:
        """Raise the interrupt flag naming `turn_id`, in one conditional write: with
        `token_hash`, only while the session's token hash is still that one. True if
        written. A flag naming one turn never stops another."""

    async def interrupt_requested(self, session_id: str, turn_id: str | None = None) -> bool:
        """Whether a stop has been requested: a flag from `set_interrupt`, or (with
        `turn_id`) one from `request_interrupt` naming that turn."""


@runtime_checkable
class ReminderStore(Protocol):
    """Durable reminders, by id."""

    async def put_reminder(self, reminder: ReminderRecord) -> None:
        """Create or replace a reminder."""

    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None: ...

    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]: ...

    async def delete_reminder(self, reminder_id: str) -> bool: ...


@runtime_checkable
class EvalRunStore(Protocol):
    """Snapshots of eval runs (`/v1/dev/evals/runs`), JSON objects keyed by `runId`."""

    async def put_eval_run(self, snapshot: dict[str, Any]) -> None:
        """Create or replace the snapshot of run `snapshot["runId"]`."""

    async def get_eval_run(self, run_id: str) -> dict[str, Any] | None: ...

    async def list_eval_runs(self) -> list[dict[str, Any]]:
        """Every stored run snapshot, newest `createdAt` first."""


@runtime_checkable
class ClaimStore(Protocol):
    """Idempotency claims: the first of several attempts at one key wins."""

    async def claim(self, key: str, ttl: float) -> bool:
        """Record `key` for `ttl` seconds. True for the first claim, False for a repeat.
        A new claim is in state `started`."""

    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None:
        """Set the claim on `key` to `state` (`done`, `failed`) for `ttl` seconds."""

    async def release_claim(self, key: str) -> None:
        """Forget the claim on `key`, so the next `claim` of it succeeds (a retry)."""

    async def get_claim(self, key: str) -> Claim | None:
        """The live claim on `key`, or None when there is none (or it lapsed)."""


@runtime_checkable
class Store(
    SessionStore, EventStore, LeaseStore, ReminderStore, EvalRunStore, ClaimStore, Protocol
):
    """Durable state of one agent's sessions: every role, in one object."""

    async def close(self) -> None:
        """Release resources (connections, watchers)."""


@runtime_checkable
class SessionFolders(Protocol):
    """Optional, beside `Store`: a store that keeps its sessions in local folders (the file
    store) says where, so the engine puts workspaces and per-call folders beside them."""

    @property
    def root(self) -> Path:
        """The folder the store keeps everything under."""
        ...

    def workspace_dir(self, session_id: str) -> Path:
        """The session's workspace folder."""
        ...


@runtime_checkable
class PinsSessions(Protocol):
    """Optional, beside `Store`: a store that caches a bounded number of sessions (the file
    store's parsed events) keeps the sessions pinned here cached, outside that bound. The
    engine pins each session a stream tail follows, for the tail's life, so many followed
    sessions never evict each other. Pins are counted: one `unpin_session` per
    `pin_session`."""

    def pin_session(self, session_id: str) -> None:
        """Keep `session_id` cached until it is unpinned."""
        ...

    def unpin_session(self, session_id: str) -> None:
        """Undo one `pin_session`."""
        ...
