"""The tool table of one agent: schemas for the model, validation, approval rules, execution.

Server tools run in-process: input is validated with the tool's pydantic model (or its JSON
Schema), sync handlers run in the bounded tool pool (`toolpool`), every call has a timeout,
and an exception becomes an error result the model sees. `execution="agent"` tools run as
a subprocess in the session workspace (see `agent_tool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import hashlib
import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import AliasChoices, AliasPath, BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from agentkit.authoring.contexts import SessionInfo, ToolContext
from agentkit.authoring.tools import ToolDefinition
from agentkit.engine.tools.pool import PoolSaturated, tool_pool
from agentkit.engine.tools.task_start import start_task
from agentkit.models.base import ToolSchema
from agentkit.project.manifest import Manifest, ToolSpec
from agentkit.sessions import SessionRecord, conversation_key
from agentkit.store.ids import is_valid_name

if TYPE_CHECKING:
    import jsonschema


class ToolSource(Protocol):
    """What the tool table needs from a project bundle."""

    @property
    def manifest(self) -> Manifest: ...

    def tool(self, name: str) -> ToolDefinition | None: ...


class ToolProvider(Protocol):
    """Tools that come from outside the project (MCP connections): listed per turn."""

    async def tool_entries(self) -> list[ToolEntry]: ...


class InvalidToolInput(Exception):
    """Arguments that do not match the tool's schema; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one tool call produced."""

    is_error: bool
    result: Any = None
    error: str | None = None
    duration_ms: int = 0


BuiltinHandler = Callable[[Any, ToolContext], Any]


@dataclass(slots=True)
class ToolEntry:
    """One callable tool: authored (`spec` set) or built in (`builtin` set)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    spec: ToolSpec | None = None
    input_model: type[BaseModel] | None = None
    builtin: BuiltinHandler | None = None
    timeout: float | None = None
    definition: ToolDefinition | None = None
    approval: bool = False  # a provided tool (no spec) that asks for approval every call
    _validator: Any = field(default=None, repr=False)

    @property
    def execution(self) -> str:
        return self.spec.execution if self.spec is not None else "server"

    def schema(self) -> ToolSchema:
        return ToolSchema(self.name, self.description, self.input_schema)

    def validate(self, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        """(the validated arguments as recorded, the value handed to the handler)."""
        if not isinstance(arguments, Mapping):
            raise InvalidToolInput("tool input must be a JSON object")
        if self.input_model is not None:
            unknown = unknown_keys(self.input_model, arguments)
            if unknown:
                raise InvalidToolInput(_unknown_message(self.input_model, unknown))
            try:
                value = self.input_model.model_validate(dict(arguments))
            except ValidationError as exc:
                raise InvalidToolInput(_validation_message(exc)) from None
            return value.model_dump(mode="json", by_alias=True), value
        if self._validator is None:
            # Imported here: only a tool with a raw JSON Schema input needs it, and the API
            # function of a deployment never runs a tool, so its cold start skips it.
            import jsonschema

            self._validator = jsonschema.Draft202012Validator(self.input_schema)
        errors = sorted(self._validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if errors:
            raise InvalidToolInput("; ".join(_schema_message(e) for e in errors[:5]))
        return dict(arguments), dict(arguments)

    def needs_approval(self, value: Any) -> bool:
        if self.spec is None:
            return self.approval
        if self.definition is not None and self.spec.needs_approval == "predicate":
            try:
                return self.definition.requires_approval(value)
            except Exception:  # a broken predicate must not let the call through unreviewed
                return True
        return bool(self.spec.needs_approval)


def unknown_keys(model: type[BaseModel], arguments: Mapping[str, Any]) -> list[str]:
    """The argument keys `model` has no field for (none when it takes extra keys).

    Pydantic drops them silently by default: `{"side": 20}` would roll the default die.
    """
    if model.model_config.get("extra") == "allow":
        return []
    known: set[str] = set()
    for name, info in model.model_fields.items():
        known.add(name)
        if info.alias:
            known.add(info.alias)
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            if isinstance(choice, str):
                known.add(choice)
            elif isinstance(choice, AliasPath) and isinstance(choice.path[0], str):
                known.add(choice.path[0])
    return sorted(str(k) for k in arguments if k not in known)


def _unknown_message(model: type[BaseModel], unknown: list[str]) -> str:
    fields = [info.alias or name for name, info in model.model_fields.items()]  # as in its schema
    named = []
    for key in unknown[:5]:
        close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
        named.append(f"{key} (did you mean {close[0]}?)" if close else key)
    takes = ", ".join(fields) if fields else "no arguments"
    keys = "unknown keys" if len(unknown) > 1 else "unknown key"
    return f"invalid tool input: {keys} {', '.join(named)}; the tool takes {takes}"


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "input"
        parts.append(f"{loc}: {err.get('msg')}")
    return "invalid tool input: " + "; ".join(parts)


def _schema_message(err: jsonschema.ValidationError) -> str:
    loc = ".".join(str(p) for p in err.path) or "input"
    return f"invalid tool input: {loc}: {err.message}"


def authored_entry(spec: ToolSpec, definition: ToolDefinition | None) -> ToolEntry:
    """The entry of a tool from `agent/tools/` (definition None for agent-execution tools)."""
    model = definition.input_model if definition is not None else None
    timeout = spec.timeout if spec.timeout is not None else None
    if definition is not None and definition.timeout is not None:
        timeout = definition.timeout
    return ToolEntry(
        name=spec.name,
        description=spec.description,
        input_schema=dict(spec.input_schema),
        spec=spec,
        input_model=model,
        timeout=timeout,
        definition=definition,
    )


@functools.lru_cache(maxsize=512)
def _arity(fn: Callable[..., Any]) -> int:
    # Cached per handler: `inspect.signature` was a tenth of a turn's engine time.
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional)


@functools.lru_cache(maxsize=512)
def _is_async(fn: Callable[..., Any]) -> bool:
    # Cached per handler, as `_arity` is: a handler's kind does not change.
    return inspect.iscoroutinefunction(fn)


async def invoke(entry: ToolEntry, value: Any, ctx: ToolContext, timeout: float) -> Outcome:
    """Run a server or built-in tool with a timeout; failures become error outcomes."""
    started = time.perf_counter()
    fn: Callable[..., Any]
    if entry.builtin is not None:
        fn = entry.builtin
    elif entry.definition is not None:
        fn = entry.definition.handler
    else:
        return Outcome(True, error=f"tool {entry.name!r} has no handler on this host")
    args: tuple[Any, ...] = (value, ctx)[: _arity(fn)]
    try:
        if _is_async(fn):
            # A handler that never waits is done as soon as it starts (see `start_task`):
            # no timer for it. The time it took counts toward its timeout either way.
            deadline = asyncio.get_running_loop().time() + timeout
            call = start_task(fn(*args))
            if call.done():
                result = call.result()
            else:
                remaining = deadline - asyncio.get_running_loop().time()
                result = await asyncio.wait_for(call, remaining)
        else:
            # The tool pool, not the default executor: an abandoned call (timed out or
            # stopped) keeps its thread there, never one the store or server needs.
            result = await asyncio.wait_for(tool_pool().run(fn, *args), timeout)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, timeout)
        if isinstance(result, Outcome):
            return result  # a handler that already knows its outcome (a replay's recording)
        out = to_jsonable_python(result, fallback=str)
    except PoolSaturated as exc:
        return Outcome(True, error=str(exc), duration_ms=elapsed_ms(started))
    except TimeoutError:
        return Outcome(
            True,
            error=f"tool {entry.name!r} timed out after {timeout:g}s",
            duration_ms=elapsed_ms(started),
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        msg = str(exc) or type(exc).__name__
        return Outcome(True, error=f"{type(exc).__name__}: {msg}", duration_ms=elapsed_ms(started))
    return Outcome(False, result=out, duration_ms=elapsed_ms(started))


def elapsed_ms(started: float) -> int:
    """Whole milliseconds since `started`, a `time.perf_counter()` reading."""
    return int((time.perf_counter() - started) * 1000)


def call_workdir(root: Path, call_id: str) -> Path:
    """The per-call working folder under `root/tool-calls/` (not created here).

    Call ids come from the model provider, so any id that is not a plain name is hashed
    before it becomes a folder name."""
    name = call_id if is_valid_name(call_id) else hashlib.sha256(call_id.encode()).hexdigest()
    return _calls_dir(root) / name


@functools.lru_cache(maxsize=64)
def _calls_dir(root: Path) -> Path:
    return root / "tool-calls"  # (joining paths is slow enough to count in a turn)


class CallContext(ToolContext):
    """A `ToolContext` whose working folder is created the first time the tool asks for it.

    Most tools never touch it, and a `mkdir` per call is the most expensive thing in a
    turn on a busy disk; the folder still exists before any code can use the path.
    """

    @property
    def workdir(self) -> Path:
        state = self.__dict__
        path: Path = state["_workdir"]
        if not state.get("_made"):
            path.mkdir(parents=True, exist_ok=True)
            state["_made"] = True
        return path

    @workdir.setter
    def workdir(self, value: Path) -> None:
        self.__dict__["_workdir"] = value

    def cleanup(self) -> None:
        """Remove the folder if it was made and left empty (in a worker, never awaited)."""
        if not self.__dict__.get("_made"):
            return
        path: Path = self.__dict__["_workdir"]

        def rmdir() -> None:
            with contextlib.suppress(OSError):
                path.rmdir()

        try:
            asyncio.get_running_loop().run_in_executor(None, rmdir)
        except RuntimeError:
            rmdir()


def session_info(record: SessionRecord) -> SessionInfo:
    """The read-only view of a session that tools and hooks receive."""
    return SessionInfo(
        id=record.id,
        channel_id=record.channel_id,
        mode=record.mode,
        principal=record.principal,
        continuation_key=conversation_key(record),
    )
