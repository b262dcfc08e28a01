"""`define_tool`: one typed tool per file under `agent/tools/`."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints, overload

from pydantic import BaseModel

Execution = Literal["server", "agent"]
ApprovalRule = bool | Callable[[Any], bool]
# The engine's own tools (skills and subagents); an authored tool may not take these names.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BUILTIN_TOOL_NAMES = frozenset({"load_skill", "read_skill_file", "task"})


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool: description, input schema, handler and approval rule.

    `input_model` is the pydantic model the input is validated with (None when a raw JSON
    Schema was given); `needs_approval` is a bool or a predicate over the validated input.
    """

    description: str
    handler: Callable[..., Any]
    input_model: type[BaseModel] | None = None
    json_schema: Mapping[str, Any] = field(default_factory=dict)
    needs_approval: ApprovalRule = False
    execution: Execution = "server"
    timeout: float | None = None
    name: str | None = None  # the file name wins during discovery
    # Why the input schema could not be derived (an untyped input parameter, say); discovery
    # reports it as an error naming the file instead of serving an empty schema.
    input_problem: str | None = None
    env: tuple[str, ...] = ()  # server environment variables an agent-execution tool may see
    idempotent: bool = False  # running it again with the same `ctx.idempotency_key` is safe
    reconcile: Callable[..., Any] | None = None  # what happened to a call a crash left in doubt

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)

    def requires_approval(self, validated_input: Any) -> bool:
        rule = self.needs_approval
        return bool(rule(validated_input)) if callable(rule) else bool(rule)

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema the model and the HTTP API see."""
        if self.input_model is not None:
            return self.input_model.model_json_schema()
        return dict(self.json_schema) or {"type": "object", "properties": {}}


def _model_from_signature(fn: Callable[..., Any]) -> tuple[type[BaseModel] | None, str | None]:
    """The pydantic model annotating the handler's first parameter, or why there is none.

    A handler with no parameters takes no input; one whose first parameter is not annotated
    with a pydantic model would get an empty schema, so the model could never send it
    anything: that is reported rather than guessed.
    """
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        return None, None
    first = params[0].name
    fix = (
        f"annotate it with a pydantic model (`{first}: MyInput`, where "
        "`class MyInput(BaseModel)` lists the fields) or pass input_schema= to define_tool"
    )
    try:
        hints = get_type_hints(fn)
    except Exception as exc:  # an annotation naming something that cannot be imported
        return None, f"the type of the input parameter {first!r} cannot be resolved ({exc}); {fix}"
    hint = hints.get(first)
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return hint, None
    if hint is None:
        return None, f"the input parameter {first!r} has no type annotation; {fix}"
    return None, f"the input parameter {first!r} is annotated {hint!r}, not a pydantic model; {fix}"


@dataclass(frozen=True, slots=True)
class _Recovery:
    """How a call a crash left in doubt is settled: `idempotent` and `reconcile`."""

    idempotent: bool
    reconcile: Callable[..., Any] | None

    def checked(self, execution: str) -> _Recovery:
        if not isinstance(self.idempotent, bool):
            raise ValueError(f"idempotent must be True or False, not {self.idempotent!r}")
        fn = self.reconcile
        if execution == "agent" and (self.idempotent or fn is not None):
            # The host never imports an agent-execution tool's module: it has no function to
            # call, and settles such a call in doubt as unknown.
            raise ValueError("idempotent and reconcile are for server tools, not execution='agent'")
        if fn is None:
            return self
        if not callable(fn):
            raise ValueError(f"reconcile must be a function (input, ctx), not {fn!r}")
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return self
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if not 1 <= len(positional) <= 2 and not any(p.kind == p.VAR_POSITIONAL for p in params):
            raise ValueError(
                f"reconcile takes (input) or (input, ctx), not {len(positional)} parameters"
            )
        return self


def _build(
    fn: Callable[..., Any],
    description: str,
    input_schema: type[BaseModel] | Mapping[str, Any] | None,
    needs_approval: ApprovalRule,
    execution: Execution,
    timeout: float | None,
    name: str | None,
    env: Sequence[str] = (),
    recovery: _Recovery | None = None,
) -> ToolDefinition:
    recovery = (recovery or _Recovery(False, None)).checked(execution)
    if not description or not description.strip():
        raise ValueError("define_tool needs a non-empty description")
    if execution not in ("server", "agent"):
        raise ValueError(f"execution must be 'server' or 'agent', not {execution!r}")
    if isinstance(env, str) or not all(isinstance(n, str) and _ENV_NAME.match(n) for n in env):
        raise ValueError(f"env must be a list of environment variable names, not {env!r}")
    model: type[BaseModel] | None
    raw: Mapping[str, Any] = {}
    problem: str | None = None
    if isinstance(input_schema, type) and issubclass(input_schema, BaseModel):
        model = input_schema
    elif isinstance(input_schema, Mapping):
        model, raw = None, input_schema
    else:
        model, problem = _model_from_signature(fn)
    return ToolDefinition(
        description=description.strip(),
        handler=fn,
        input_model=model,
        json_schema=raw,
        needs_approval=needs_approval,
        execution=execution,
        timeout=timeout,
        name=name,
        input_problem=problem,
        env=tuple(env),
        idempotent=recovery.idempotent,
        reconcile=recovery.reconcile,
    )


@overload
def define_tool(
    fn: Callable[..., Any],
    *,
    description: str,
    input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    needs_approval: ApprovalRule = False,
    execution: Execution = "server",
    timeout: float | None = None,
    name: str | None = None,
    env: Sequence[str] = (),
    idempotent: bool = False,
    reconcile: Callable[..., Any] | None = None,
) -> ToolDefinition: ...


@overload
def define_tool(
    fn: None = None,
    *,
    description: str,
    input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    needs_approval: ApprovalRule = False,
    execution: Execution = "server",
    timeout: float | None = None,
    name: str | None = None,
    env: Sequence[str] = (),
    idempotent: bool = False,
    reconcile: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def define_tool(
    fn: Callable[..., Any] | None = None,
    *,
    description: str,
    input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    needs_approval: ApprovalRule = False,
    execution: Execution = "server",
    timeout: float | None = None,
    name: str | None = None,
    env: Sequence[str] = (),
    idempotent: bool = False,
    reconcile: Callable[..., Any] | None = None,
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Define a tool, as a decorator or called with the handler as first argument.

    The input schema is the pydantic model annotating the handler's first parameter, or
    `input_schema=` (a model or a raw JSON Schema). Handlers may be sync or async and take
    `(input, ctx)`. `needs_approval` is a bool or a predicate over the validated input.
    `env` names the server environment variables an `execution="agent"` tool's process
    may see (e.g. `env=["GITHUB_TOKEN"]`); it gets no others beyond a small allow-list.

    After a crash left a call in doubt (it may have run; no result was recorded),
    `reconcile(input, ctx)` is asked what happened: it returns the call's result,
    `NOT_DONE` or `UNKNOWN` (see `agentkit.authoring.reconcile`). `idempotent=True` says
    running the call again with the same `ctx.idempotency_key` cannot repeat its effect, so
    a call in doubt is run again instead of being reported as unknown.
    """
    extra = _Recovery(idempotent, reconcile)
    if fn is not None:
        return _build(
            fn, description, input_schema, needs_approval, execution, timeout, name, env, extra
        )

    def decorate(f: Callable[..., Any]) -> ToolDefinition:
        return _build(
            f, description, input_schema, needs_approval, execution, timeout, name, env, extra
        )

    return decorate
