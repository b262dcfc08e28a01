"""`define_eval` and `define_evals_config`: filesystem evals over a turn's trajectory.

    # evals/weather/asks_tool.eval.py  -> eval id "weather/asks_tool"
    case = define_eval(
        message="What's the weather in Paris?",
        assertions=[called_tool("get_weather", city="Paris"), reply_contains("simulated")],
        tags=["smoke"],
    )

    # evals/evals.config.py (required when evals exist)
    config = define_evals_config(max_concurrency=4)

An assertion is any callable taking the `Trajectory` (the session's events after the
turn). It fails by raising `AssertionError` or returning `False` or a message string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.events import Event, EventType

Assertion = Callable[["Trajectory"], Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call seen in a trajectory, with its result when it ran."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Trajectory:
    """The events of one eval session, with helpers the assertions read."""

    events: tuple[Event, ...]

    @property
    def tool_calls(self) -> list[ToolCall]:
        results = {
            e.data.get("callId"): e.data for e in self.events if e.type == EventType.ACTION_RESULT
        }
        calls: list[ToolCall] = []
        for e in self.events:
            if e.type != EventType.ACTIONS_REQUESTED:
                continue
            for action in e.data.get("actions", []):
                res = results.get(action.get("callId"), {})
                calls.append(
                    ToolCall(
                        name=str(action.get("toolName")),
                        arguments=dict(action.get("arguments") or {}),
                        result=res.get("result"),
                        is_error=bool(res.get("isError", False)),
                    )
                )
        return calls

    @property
    def reply(self) -> str:
        """The text of the last completed assistant message ('' when there is none)."""
        texts = [
            e.data.get("text", "") for e in self.events if e.type == EventType.MESSAGE_COMPLETED
        ]
        return str(texts[-1]) if texts else ""

    @property
    def failed(self) -> bool:
        bad = {EventType.TURN_FAILED, EventType.SESSION_FAILED}
        return any(e.type in bad for e in self.events)


def called_tool(name: str, **arguments: Any) -> Assertion:
    """The model called tool `name` (with at least these argument values, if given)."""

    def check(t: Trajectory) -> bool | str:
        for call in t.tool_calls:
            if call.name == name and all(call.arguments.get(k) == v for k, v in arguments.items()):
                return True
        seen = ", ".join(c.name for c in t.tool_calls) or "none"
        return f"expected a call to {name} {arguments or ''}; tools called: {seen}"

    return check


def did_not_call(name: str) -> Assertion:
    """The model never called tool `name`."""

    def check(t: Trajectory) -> bool | str:
        return all(c.name != name for c in t.tool_calls) or f"{name} was called"

    return check


def reply_contains(text: str, *, case_sensitive: bool = False) -> Assertion:
    """The final reply contains `text`."""

    def check(t: Trajectory) -> bool | str:
        reply = t.reply if case_sensitive else t.reply.lower()
        needle = text if case_sensitive else text.lower()
        return needle in reply or f"reply does not contain {text!r}: {t.reply[:200]!r}"

    return check


def reply_matches(pattern: str) -> Assertion:
    """The final reply matches the regular expression `pattern` (search)."""
    compiled = re.compile(pattern)

    def check(t: Trajectory) -> bool | str:
        return bool(compiled.search(t.reply)) or f"reply does not match /{pattern}/"

    return check


def succeeded() -> Assertion:
    """No turn or session failed."""

    def check(t: Trajectory) -> bool | str:
        return not t.failed or "the turn failed"

    return check


@dataclass(frozen=True, slots=True)
class EvalDefinition:
    """One eval case: the message(s) sent, the assertions, and tags to select it by."""

    messages: tuple[str, ...]
    assertions: tuple[Assertion, ...]
    tags: tuple[str, ...] = ()
    description: str | None = None
    timeout: float | None = None

    def check(self, trajectory: Trajectory) -> list[str]:
        """Run every assertion; return the failure messages (empty when all pass)."""
        failures: list[str] = []
        for i, assertion in enumerate(self.assertions):
            label = getattr(assertion, "__name__", f"assertion {i}")
            try:
                outcome = assertion(trajectory)
            except AssertionError as exc:
                failures.append(str(exc) or f"{label} failed")
                continue
            if outcome is False:
                failures.append(f"{label} failed")
            elif isinstance(outcome, str):
                failures.append(outcome)
        return failures


def define_eval(
    *,
    message: str | Sequence[str],
    assertions: Sequence[Assertion] = (),
    tags: Sequence[str] = (),
    description: str | None = None,
    timeout: float | None = None,
) -> EvalDefinition:
    """Define an eval. Several messages are sent in order as follow-ups of one session."""
    messages = (message,) if isinstance(message, str) else tuple(message)
    if not messages or not all(isinstance(m, str) and m.strip() for m in messages):
        raise ValueError("define_eval needs a non-empty message")
    for a in assertions:
        if not callable(a):
            raise TypeError("every assertion must be callable (trajectory) -> ...")
    return EvalDefinition(
        messages=messages,
        assertions=tuple(assertions),
        tags=tuple(tags),
        description=description,
        timeout=timeout,
    )


@dataclass(frozen=True, slots=True)
class EvalsConfig:
    """Settings of an eval run (`evals/evals.config.py`)."""

    max_concurrency: int = 4
    timeout: float = 300.0
    model: str | None = None  # None: the agent's own model
    options: dict[str, Any] = field(default_factory=dict)


def define_evals_config(
    *, max_concurrency: int = 4, timeout: float = 300.0, model: str | None = None
) -> EvalsConfig:
    """Define how evals run: how many cases at once, per-case timeout, optional model."""
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    return EvalsConfig(max_concurrency=max_concurrency, timeout=timeout, model=model)
