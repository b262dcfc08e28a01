"""Fault injection for the emulator: `--chaos duplicate=0.3,timeout=0.1,throttle=0.05,seed=7`.

Each key is a probability per opportunity:

- `duplicate`: an asynchronous invoke (a turn, a schedule firing) or a stream batch is
  delivered twice, as Lambda, Scheduler and the stream's poller all may;
- `timeout`: an invocation of TurnFunction, HooksFunction or SchedulerFunction is killed at
  a random point before its end, as Lambda kills a function that runs out of time; the
  invocation then counts as failed and is retried by the service's own policy;
- `throttle`: a DynamoDB call answers `ProvisionedThroughputExceededException` or
  `ThrottlingException` (a `TransactWriteItems` answers a transaction conflict instead),
  injected through a botocore event hook on the functions' clients, beneath botocore's own
  retries, so what the store sees is what a hot table gives it;
- `conflict`: the transaction-conflict rate on its own (default: `throttle`);
- `late`: a stream batch arrives late (default: half of `duplicate`);
- `seed`: the seed of every decision (default 0), printed with every injected fault.

Decisions in the emulator's own process (duplicates, timeouts, late batches) come from one
generator seeded with `seed`; each function process seeds its own from `seed` and its
serial number, so a run with the same seed and the same traffic injects the same faults.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("agentkit.emulator.chaos")

_RATES = ("duplicate", "timeout", "throttle", "conflict", "late")


class ChaosSpecError(ValueError):
    """A `--chaos` value that cannot be read."""


@dataclass(frozen=True, slots=True)
class ChaosSpec:
    """The fault rates of one run (all zero: no faults)."""

    duplicate: float = 0.0
    timeout: float = 0.0
    throttle: float = 0.0
    conflict: float = 0.0
    late: float = 0.0
    seed: int = 0

    @classmethod
    def parse(cls, text: str | None) -> ChaosSpec:
        """Read `key=value,...`; raise `ChaosSpecError` with what is wrong."""
        if not text or not text.strip():
            return cls()
        values: dict[str, Any] = {}
        for part in text.split(","):
            key, sep, raw = part.strip().partition("=")
            if not sep:
                raise ChaosSpecError(f"--chaos: {part.strip()!r} is not key=value")
            if key == "seed":
                try:
                    values["seed"] = int(raw)
                except ValueError:
                    raise ChaosSpecError(f"--chaos: seed must be an integer, not {raw!r}") from None
                continue
            if key not in _RATES:
                raise ChaosSpecError(
                    f"--chaos: unknown fault {key!r}; known: {', '.join(_RATES)}, seed"
                )
            try:
                rate = float(raw)
            except ValueError:
                rate = -1.0
            if not 0.0 <= rate <= 1.0:
                raise ChaosSpecError(f"--chaos: {key} must be a probability in [0, 1], not {raw!r}")
            values[key] = rate
        values.setdefault("conflict", values.get("throttle", 0.0))
        values.setdefault("late", values.get("duplicate", 0.0) / 2)
        return cls(**values)

    @property
    def active(self) -> bool:
        return any(getattr(self, k) > 0 for k in _RATES)

    def as_text(self) -> str:
        rates = ",".join(f"{k}={getattr(self, k):g}" for k in _RATES)
        return f"{rates},seed={self.seed}"


class Chaos:
    """The emulator process's fault decisions, each one logged with the seed."""

    def __init__(self, spec: ChaosSpec) -> None:
        self.spec = spec
        self._rng = random.Random(spec.seed)
        self.counts: dict[str, int] = {}

    def roll(self, fault: str, where: str) -> bool:
        """True when `fault` is injected at `where` (logged)."""
        rate = float(getattr(self.spec, fault))
        if rate <= 0 or self._rng.random() >= rate:
            return False
        self.counts[fault] = self.counts.get(fault, 0) + 1
        log.warning("chaos seed=%d fault=%s at %s", self.spec.seed, fault, where)
        return True

    def uniform(self, low: float, high: float) -> float:
        return self._rng.uniform(low, high)


# -- DynamoDB faults inside a function process (a botocore event hook) -------------------

_THROTTLES = ("ProvisionedThroughputExceededException", "ThrottlingException")


class _Body:
    """The raw body botocore reads a short-circuited response from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def install_dynamodb_faults(events: Any, spec: ChaosSpec, serial: int) -> None:
    """Register a `before-send.dynamodb` handler on a botocore event emitter (a session's,
    before it makes clients) that answers some calls with a throttle or a conflict."""
    if spec.throttle <= 0 and spec.conflict <= 0:
        return
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    rng = random.Random(spec.seed * 1_000_003 + serial)

    def answer(code: str, message: str, extra: dict[str, Any] | None = None) -> Any:
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
        body.update(extra or {})
        data = json.dumps(body).encode("utf-8")
        headers = HTTPHeaders()
        headers["x-amzn-RequestId"] = "chaos"
        headers["Content-Type"] = "application/x-amz-json-1.0"
        return AWSResponse("https://dynamodb.chaos", 400, headers, _Body(data))

    def before_send(request: Any, **_: Any) -> Any:
        raw = request.headers.get("X-Amz-Target") or ""
        target = raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)
        operation = target.rsplit(".", 1)[-1]
        if operation == "TransactWriteItems" and rng.random() < spec.conflict:
            items = json.loads(request.body or b"{}").get("TransactItems") or [{}]
            log.warning("chaos seed=%d fault=conflict at dynamodb.%s", spec.seed, operation)
            reasons = [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * (len(items) - 1)
            return answer(
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons "
                "[TransactionConflict]",
                {"CancellationReasons": reasons},
            )
        if rng.random() < spec.throttle:
            code = rng.choice(_THROTTLES)
            log.warning(
                "chaos seed=%d fault=throttle(%s) at dynamodb.%s", spec.seed, code, operation
            )
            return answer(code, "injected by --chaos")
        return None

    events.register("before-send.dynamodb", before_send, unique_id="agentkit-chaos")
