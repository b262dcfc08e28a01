"""Powertools Logger, Tracer and Metrics, shared by every function of the stack.

Logs are structured JSON carrying `sessionId` and `turnId` once a handler knows them;
metrics (turns, failures, tokens) go out as CloudWatch embedded metric format through the
logs, so no extra API call or permission is needed. Built lazily, once per cold start.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from typing import Any

from agentkit.events import Event, EventType

NAMESPACE_DEFAULT = "agentkit"


@lru_cache(maxsize=1)
def logger() -> Any:
    """The Powertools Logger; agentkit's own loggers propagate into it."""
    from aws_lambda_powertools import Logger

    log = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "agentkit"))
    # Route the standard-library loggers of agentkit (and user code) through the same
    # JSON formatter, so every line carries the appended sessionId/turnId keys.
    from aws_lambda_powertools.logging import utils

    utils.copy_config_to_registered_loggers(source_logger=log, include={"agentkit"})
    return log


@lru_cache(maxsize=1)
def tracer() -> Any:
    from aws_lambda_powertools import Tracer

    return Tracer(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "agentkit"))


@lru_cache(maxsize=1)
def metrics() -> Any:
    from aws_lambda_powertools import Metrics

    return Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE_DEFAULT))


def metrics_if_used() -> Any | None:
    """The Metrics object if this cold start made one (something recorded a metric), else
    None: the API function, which runs no turn, then never imports Powertools Metrics."""
    return metrics() if metrics.cache_info().currsize else None


def bind_turn(session_id: str | None, turn_id: str | None = None) -> None:
    """Put the session and turn ids on every log line from here on in this invocation."""
    keys = {k: v for k, v in (("sessionId", session_id), ("turnId", turn_id)) if v}
    if keys:
        logger().append_keys(**keys)


def record_turn_metrics(events: list[Event]) -> None:
    """Count finished turns, failures and tokens from the events a turn recorded."""
    from aws_lambda_powertools.metrics import MetricUnit

    m = metrics()
    for event in events:
        if event.type == EventType.TURN_COMPLETED:
            m.add_metric(name="TurnsCompleted", unit=MetricUnit.Count, value=1)
            usage = event.data.get("usage") or {}
            for key, name in (("inputTokens", "InputTokens"), ("outputTokens", "OutputTokens")):
                if isinstance(usage.get(key), int):
                    m.add_metric(name=name, unit=MetricUnit.Count, value=usage[key])
        elif event.type == EventType.TURN_FAILED:
            m.add_metric(name="TurnsFailed", unit=MetricUnit.Count, value=1)


def configure_stdlib_logging() -> None:
    """Outside Lambda (tests, `sam local`), keep agentkit's logs at the configured level."""
    level = os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO")
    logging.getLogger("agentkit").setLevel(level)
