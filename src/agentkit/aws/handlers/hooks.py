"""HooksFunction: the agent's hooks, fed by the events table's DynamoDB stream.

The event source mapping passes only inserted event items (template.yaml filters on
`kind = "event"`). Records are decoded with the store's own codec (large events are
reassembled from their chunks) and handed to the hooks in stream order, which is index order
within a session. A hook's error is logged and never fails the batch: hooks are
observe-only. A record that cannot be read (a throttled chunk read, say) is reported with
every record after it as `batchItemFailures`, so Lambda retries from there and no event is
skipped. Delivery is at-least-once: a retried batch calls hooks again with the same
`(sessionId, index)` pairs, which is what handlers de-duplicate on.
"""

from __future__ import annotations

import logging
from typing import Any

from agentkit.aws.handlers._common import host, instrumented, run
from agentkit.events import Event

log = logging.getLogger("agentkit.aws.hooks")


def decode_records(records: list[dict[str, Any]]) -> tuple[list[Event], list[str]]:
    """The events of a stream batch, and the sequence numbers that must be retried."""
    events: list[Event] = []
    failed: list[str] = []
    for record in records:
        sequence = str(record.get("dynamodb", {}).get("SequenceNumber", ""))
        if failed:
            failed.append(sequence)  # keep order: nothing after a failure is acknowledged
            continue
        if record.get("eventName") != "INSERT":
            continue
        image = record.get("dynamodb", {}).get("NewImage")
        if not image:
            continue
        try:
            event = host().read_stream_event(image)
        except Exception:
            log.exception("cannot read stream record %s", sequence)
            failed.append(sequence)
            continue
        if event is not None:
            events.append(event)
    return events, failed


@instrumented
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    events, failed = decode_records(list(event.get("Records") or []))
    failures = run(host().deliver_to_hooks(events))
    for failure in failures:
        log.warning(
            "hook %s failed on %s #%d of %s: %s",
            failure.hook,
            failure.event_type,
            failure.index,
            failure.session_id,
            failure.error,
        )
    try:
        run(host().fold_abs(events))
    except Exception:  # observe-only, like the hooks: the turn is long done
        log.exception("A/B snapshot update failed for this batch")
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}
