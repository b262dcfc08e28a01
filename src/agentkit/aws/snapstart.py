"""Lambda SnapStart: prime the function before the snapshot, renew what must not be shared
after a restore.

With SnapStart (template parameter `EnableSnapStart`), Lambda runs a function's init once
when a version is published, snapshots the memory, and starts later environments from that
snapshot. Everything made during init is then shared by every environment restored from it:

- Python's `random` state: every restored environment would draw the same numbers, so
  `after_restore` seeds it again from the OS (`secrets`, `uuid.uuid4` and `os.urandom`
  read the OS on every call and need nothing).
- AWS clients and their open connections, and the credentials they resolved: connections
  made before the snapshot are dead after it, and the credentials may have expired.
  `before_snapshot` and `after_restore` drop every client (the host's lazy clients, the
  shared factory's cache), so each is built again, with its own connections, on its next
  call. botocore keeps the service models it loaded, so that rebuild costs little.

`register` is called by every handler module at import. It does nothing outside a
SnapStart init (`AWS_LAMBDA_INITIALIZATION_TYPE` is `snap-start` only then), and it imports
`snapshot_restore_py` guardedly: the Lambda Python runtime ships it; elsewhere it is absent
unless installed. Under SnapStart `prime` builds the host (manifest, runtime, routes) and
loads boto3's DynamoDB model during init, so that work is in the snapshot instead of on the
first request.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable

log = logging.getLogger("agentkit.aws.snapstart")

INIT_TYPE_VARIABLE = "AWS_LAMBDA_INITIALIZATION_TYPE"
SNAP_START = "snap-start"

_registered = False


def snapstart_init() -> bool:
    """True while Lambda initializes a function version for a SnapStart snapshot."""
    return os.environ.get(INIT_TYPE_VARIABLE) == SNAP_START


def register(prime_work: Callable[[], object] | None = None) -> bool:
    """Under a SnapStart init: register the runtime hooks (once per process) and run
    `prime_work` (the handler's own priming, e.g. building the API app). True when the
    hooks are registered."""
    global _registered
    if not snapstart_init():
        return False
    if not _registered:
        try:
            from snapshot_restore_py import register_after_restore, register_before_snapshot
        except ImportError:  # not a Lambda runtime: nothing will snapshot this process
            log.warning("SnapStart init without snapshot_restore_py; hooks not registered")
            return False
        register_before_snapshot(before_snapshot)
        register_after_restore(after_restore)
        _registered = True
    prime(prime_work)
    return True


def prime(extra: Callable[[], object] | None = None) -> None:
    """Do the first request's work now, so it lands in the snapshot. Never raises: a
    failure here leaves that work to the first request, as without SnapStart."""
    from agentkit.aws.handlers._common import host

    try:
        built = host()
        # Loads boto3, botocore and the DynamoDB service model; the client itself is
        # dropped before the snapshot (`before_snapshot`).
        built.client("dynamodb")
        if extra is not None:
            extra()
    except Exception:
        log.exception("SnapStart priming failed; the first request will do it")


def before_snapshot() -> None:
    """No client, and so no open connection, goes into the snapshot."""
    renew_clients()


def after_restore() -> None:
    """Make this environment's own randomness and AWS clients."""
    random.seed()  # from os.urandom: a fresh state per restored environment
    renew_clients()


def renew_clients() -> int:
    """Forget every cached AWS client (the shared factory's and the host's); each is built
    again on its next use. How many of the host's clients were dropped."""
    from agentkit.aws import clients
    from agentkit.aws.handlers import _common

    clients.client.cache_clear()
    current = _common.current_host()
    return current.renew_clients() if current is not None else 0
