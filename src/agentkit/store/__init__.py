"""The session store port, one protocol per role, and its adapters (files, DynamoDB, memory)."""

from agentkit.store.base import (
    ClaimStore,
    EvalRunStore,
    EventStore,
    Lease,
    LeaseStore,
    Page,
    ReminderStore,
    SessionStore,
    Store,
)

__all__ = [
    "ClaimStore",
    "EvalRunStore",
    "EventStore",
    "Lease",
    "LeaseStore",
    "Page",
    "ReminderStore",
    "SessionStore",
    "Store",
]
