"""HooksFunction: the agent's hooks, fed by the events table's DynamoDB stream.

The event source mapping passes only inserted event items (template.yaml filters on
`kind = "event"`). Records are decoded with the store's own codec (large events are
reassembled from their chunks) and handed to the hooks in stream order, which is index order
within a session. A hook's error is logged and never fails the batch: hooks are
observe-only. A record that cannot be read (a throttled chunk read, say) is reported with
every record after it as `batchItemFailures`, so Lambda retries from there and no event is
skipped. Delivery is at-least-once: a retried batch calls hooks again with the same
`(sessionId, index)` pairs, which is what handlers de-duplicate on.

With tracing on, an event item carries the trace context it was recorded in: each turn's
events of a batch are delivered under a `deliver_hooks` span in that turn's trace.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentkit.aws.handlers._common import host, instrumented, run
from agentkit.engine import telemetry
from agentkit.engine.trace_context import continued_from
from agentkit.events import Event
from agentkit.store.dynamodb import stream_trace_context

log = logging.getLogger("agentkit.aws.hooks")


class StreamBatch(NamedTuple):
    """A decoded stream batch: its events, the trace context each was recorded under
    (empty when untraced), and the sequence numbers Lambda must hand over again."""

    events: list[Event]
    traces: list[dict[str, str]]
    failed: list[str]


def decode_records(records: list[dict[str, Any]]) -> StreamBatch:
    """The events of a stream batch, and the sequence numbers that must be retried."""
    batch = StreamBatch([], [], [])
    for record in records:
        sequence = str(record.get("dynamodb", {}).get("SequenceNumber", ""))
        if batch.failed:
            batch.failed.append(sequence)  # keep order: nothing after a failure is acknowledged
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
            batch.failed.append(sequence)
            continue
        if event is not None:
            batch.events.append(event)
            batch.traces.append(stream_trace_context(image))
    return batch


@dataclass
class TurnRun:
    """Consecutive events of one session and at most one turn (events outside a turn, such
    as `session.started`, join the run they fall in), and the first trace context among
    them."""

    session_id: str
    turn_id: str | None = None
    events: list[Event] = field(default_factory=list)
    trace: dict[str, str] = field(default_factory=dict)

    def takes(self, event: Event) -> bool:
        return event.session_id == self.session_id and (
            event.turn_id is None or self.turn_id is None or event.turn_id == self.turn_id
        )

    def add(self, event: Event, trace: dict[str, str]) -> None:
        self.events.append(event)
        self.turn_id = self.turn_id or event.turn_id
        self.trace = self.trace or trace


def turn_runs(batch: StreamBatch) -> list[TurnRun]:
    """The batch as runs of one turn each; with tracing off, as one run (nothing to split
    it for, and one call of the hooks per batch, as before tracing existed)."""
    runs: list[TurnRun] = []
    split = telemetry.enabled()
    for event, trace in zip(batch.events, batch.traces, strict=True):
        if not runs or (split and not runs[-1].takes(event)):
            runs.append(TurnRun(event.session_id))
        runs[-1].add(event, trace)
    return runs


def deliver(run_: TurnRun) -> list[Any]:
    """Hand one run's events to the hooks and channels, under a `deliver_hooks` span in the
    trace that recorded them when tracing is on; the hook calls that failed."""
    with (
        continued_from(run_.trace),
        telemetry.hook_span(run_.session_id, run_.turn_id, len(run_.events)) as span,
    ):
        failures: list[Any] = run(host().deliver_to_hooks(run_.events))
        span.failed(len(failures))
    return failures


@instrumented
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    batch = decode_records(list(event.get("Records") or []))
    failures = [f for turn in turn_runs(batch) for f in deliver(turn)]
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
        run(host().fold_abs(batch.events))
    except Exception:  # observe-only, like the hooks: the turn is long done
        log.exception("A/B snapshot update failed for this batch")
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in batch.failed]}
