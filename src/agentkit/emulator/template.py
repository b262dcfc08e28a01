"""What the emulator reads from template.yaml: each function's handler, timeout and
asynchronous retry policy, and the stream's event source mapping.

The tables themselves come from `agentkit.store.dynamodb.create_tables`, which the template
mirrors; the function settings come from the project's template.yaml when it has one, and
otherwise from `DEFAULT_SHAPE`, the values the template ships with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class FunctionShape:
    """One Lambda function as deployed."""

    name: str  # logical id: ApiFunction, TurnFunction, ...
    handler: str  # module.attribute
    timeout: float  # seconds
    max_retries: int = 2  # asynchronous invokes (EventInvokeConfig)
    max_event_age: float = 21600.0
    reserved_concurrency: int | None = None


@dataclass(frozen=True, slots=True)
class StreamMapping:
    """The DynamoDB stream event source mapping of HooksFunction."""

    batch_size: int = 100
    batching_window: float = 1.0
    bisect_on_error: bool = True
    max_retries: int = 5
    filter_pattern: dict[str, Any] = field(
        default_factory=lambda: {
            "eventName": ["INSERT"],
            "dynamodb": {"NewImage": {"kind": {"S": ["event"]}}},
        }
    )


@dataclass(frozen=True, slots=True)
class StackShape:
    """The functions and the stream mapping of the stack."""

    functions: dict[str, FunctionShape]
    stream: StreamMapping
    integration_timeout: float = 29.0  # API Gateway's HTTP API, whatever the integration says
    max_payload_bytes: int = 6 * 1024 * 1024  # Lambda's synchronous request/response limit

    def function(self, name: str) -> FunctionShape:
        return self.functions[name]


DEFAULT_SHAPE = StackShape(
    functions={
        "ApiFunction": FunctionShape("ApiFunction", "agentkit.aws.handlers.api.handler", 30, 0),
        "TurnFunction": FunctionShape(
            "TurnFunction", "agentkit.aws.handlers.turn.handler", 900, 2, 3600
        ),
        "HooksFunction": FunctionShape("HooksFunction", "agentkit.aws.handlers.hooks.handler", 300),
        "SchedulerFunction": FunctionShape(
            "SchedulerFunction", "agentkit.aws.handlers.scheduler.handler", 300, 2
        ),
    },
    stream=StreamMapping(),
)


class _TemplateLoader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (!Ref, !Sub, ...) as plain values."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    assert isinstance(node, yaml.MappingNode)
    return loader.construct_mapping(node, deep=True)


_TemplateLoader.add_multi_constructor("!", _any_tag)


def read_template(path: Path) -> StackShape:
    """The stack shape template.yaml declares (functions missing from it keep defaults)."""
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)
    resources: dict[str, Any] = (doc or {}).get("Resources") or {}
    globals_fn = ((doc or {}).get("Globals") or {}).get("Function") or {}
    functions = dict(DEFAULT_SHAPE.functions)
    stream = DEFAULT_SHAPE.stream
    for name, default in DEFAULT_SHAPE.functions.items():
        props = (resources.get(name) or {}).get("Properties")
        if not isinstance(props, dict):
            continue
        invoke = props.get("EventInvokeConfig") or {}
        functions[name] = replace(
            default,
            handler=str(props.get("Handler") or default.handler),
            timeout=float(props.get("Timeout") or globals_fn.get("Timeout") or default.timeout),
            max_retries=int(invoke.get("MaximumRetryAttempts", default.max_retries)),
            max_event_age=float(invoke.get("MaximumEventAgeInSeconds", default.max_event_age)),
        )
        if name == "HooksFunction":
            stream = _stream_mapping(props, stream)
    return StackShape(functions=functions, stream=stream)


def _stream_mapping(props: dict[str, Any], default: StreamMapping) -> StreamMapping:
    for event in (props.get("Events") or {}).values():
        if not isinstance(event, dict) or event.get("Type") != "DynamoDB":
            continue
        p = event.get("Properties") or {}
        filters = ((p.get("FilterCriteria") or {}).get("Filters")) or []
        pattern = json.loads(filters[0]["Pattern"]) if filters else default.filter_pattern
        return StreamMapping(
            batch_size=int(p.get("BatchSize", default.batch_size)),
            batching_window=float(p.get("MaximumBatchingWindowInSeconds", default.batching_window)),
            bisect_on_error=bool(p.get("BisectBatchOnFunctionError", default.bisect_on_error)),
            max_retries=int(p.get("MaximumRetryAttempts", default.max_retries)),
            filter_pattern=pattern,
        )
    return default


def stack_shape(project: Path) -> StackShape:
    """The project's template.yaml shape, or the shipped defaults without one."""
    path = project / "template.yaml"
    return read_template(path) if path.is_file() else DEFAULT_SHAPE
