"""The session store port and its adapters (files, DynamoDB, memory)."""

from agentkit.store.base import Lease, Page, Store

__all__ = ["Lease", "Page", "Store"]
