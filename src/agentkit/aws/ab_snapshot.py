"""The A/B snapshot on AWS: HooksFunction keeps the experiments' fold in the state table.

`GET /v1/abs` would otherwise fold every session's stream on each request. Instead, as
HooksFunction reads the events table's stream, it folds the sessions whose batch holds an
enrollment or a turn end, and adds what is new to one item per arm in the state table:

    ("ab#snapshot", "<experiment>#<variant>")   sessions, and per metric n_<m>, s_<m>,
                                                 q_<m> (count, sum, sum of squares),
                                                 pausedReason once a guardrail paused it

with DynamoDB `ADD` updates, so concurrent shards never overwrite each other. Each
enrollment and each turn is claimed first (a conditional put, `Store.claim`), so a stream
batch Lambda retries is not counted twice.

Consistency: the snapshot trails the streams by the stream's delay (typically under a
second, while HooksFunction keeps up). A crash between a claim and its `ADD` loses that one
sample (counted at most once, never twice). The per-session rows of the route are still
read from the streams. Guardrails are evaluated on the snapshot after each batch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from agentkit.ab.fold import SessionFold, TurnSample, fold_session
from agentkit.ab.monitor import call_on_sample
from agentkit.ab.report import Aggregate, ArmTotals, breaches
from agentkit.ab.stats import Moments
from agentkit.authoring.ab import AbDefinition
from agentkit.events import AbPaused, Event, EventType, draft
from agentkit.store.base import Store

log = logging.getLogger("agentkit.ab")

PK = "ab#snapshot"
CLAIM_TTL = 30 * 86400
_TRIGGERS = (EventType.AB_ASSIGNED, EventType.TURN_COMPLETED, EventType.TURN_FAILED)


def _key(experiment: str, variant: str) -> dict[str, Any]:
    return {"pk": {"S": PK}, "sk": {"S": f"{experiment}#{variant}"}}


class AbSnapshot:
    """Reads and updates the snapshot items through a boto3 DynamoDB client."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    async def add(self, experiment: str, variant: str, values: Mapping[str, float]) -> None:
        names: dict[str, str] = {}
        vals: dict[str, Any] = {}
        parts = []
        for i, (name, value) in enumerate(sorted(values.items())):
            names[f"#a{i}"] = name
            vals[f":v{i}"] = {"N": str(Decimal(repr(float(value))))}
            parts.append(f"#a{i} :v{i}")
        await asyncio.to_thread(
            self.client.update_item,
            TableName=self.table,
            Key=_key(experiment, variant),
            UpdateExpression="ADD " + ", ".join(parts),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=vals,
        )

    async def pause(self, experiment: str, variant: str, reason: str) -> None:
        await asyncio.to_thread(
            self.client.update_item,
            TableName=self.table,
            Key=_key(experiment, variant),
            UpdateExpression="SET pausedReason = if_not_exists(pausedReason, :r)",
            ExpressionAttributeValues={":r": {"S": reason}},
        )

    async def read(self) -> Aggregate:
        """The whole snapshot as an `Aggregate` (one query)."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": PK}},
            "ConsistentRead": True,
        }
        while True:
            page = await asyncio.to_thread(self.client.query, **kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        agg = Aggregate()
        for item in items:
            experiment, _, variant = item["sk"]["S"].partition("#")
            arm = agg.arm(experiment, variant)
            _fill(arm, item)
            if "pausedReason" in item:
                agg.paused.setdefault(experiment, {})[variant] = item["pausedReason"]["S"]
        return agg


def _num(item: Mapping[str, Any], name: str) -> float:
    raw = item.get(name)
    return float(raw["N"]) if raw else 0.0


def _fill(arm: ArmTotals, item: Mapping[str, Any]) -> None:
    arm.sessions = int(_num(item, "sessions"))
    for name in item:
        if not name.startswith("n_"):
            continue
        metric = name[2:]
        n = int(_num(item, name))
        total, squares = _num(item, "s_" + metric), _num(item, "q_" + metric)
        if n == 0:
            continue
        mean = total / n
        arm.metrics[metric] = Moments(
            n=n, mean=mean, m2=max(0.0, squares - total * mean), total=total
        )


def _sample_values(sample: TurnSample) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric, value in sample.metrics.items():
        out["n_" + metric] = 1
        out["s_" + metric] = value
        out["q_" + metric] = value * value
    return out


async def fold_batch(
    store: Store,
    snapshot: AbSnapshot,
    experiments: Mapping[str, AbDefinition],
    events: Iterable[Event],
    record_pause: Any = None,
) -> list[TurnSample]:
    """Add a stream batch's enrollments and finished turns to the snapshot; call
    `on_sample`; pause variants a guardrail shows breached. Returns the new samples."""
    touched = sorted({e.session_id for e in events if e.type in _TRIGGERS})
    new: list[TurnSample] = []
    for session_id in touched:
        fold: SessionFold = fold_session(session_id, await store.read(session_id))
        if not fold.assignments:
            continue
        if await store.claim(f"ab#enrolled#{session_id}", CLAIM_TTL):
            for experiment, variant in fold.assignments.items():
                await snapshot.add(experiment, variant, {"sessions": 1})
        for sample in fold.samples:
            if not await store.claim(f"ab#sample#{session_id}#{sample.turn_id}", CLAIM_TTL):
                continue
            for experiment, variant in sample.assignments.items():
                await snapshot.add(experiment, variant, _sample_values(sample))
            new.append(sample)
            await call_on_sample(experiments, sample)
    if new:
        agg = await snapshot.read()
        for b in breaches(agg, experiments):
            log.warning("A/B %s: variant %s paused: %s", b.experiment, b.variant, b.reason)
            await snapshot.pause(b.experiment, b.variant, b.reason)
            if record_pause is not None:
                paused = AbPaused(experiment=b.experiment, variant=b.variant, reason=b.reason)
                await record_pause(new[-1].session_id, draft(paused))
    return new


__all__ = ["PK", "AbSnapshot", "fold_batch"]
