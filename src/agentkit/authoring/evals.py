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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.authoring.eval_steps import EvalStep, Say, as_step
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
    # What a client reading the stream saw (steps with `cut_after`), in order, across cuts.
    streamed: tuple[Event, ...] = ()
    # Other sessions the case's run created (a schedule's task sessions), by id.
    others: Mapping[str, tuple[Event, ...]] = field(default_factory=dict)

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


def called_tools(*names: str) -> Assertion:
    """The model called exactly these tools, in this order (arguments not compared)."""

    def check(t: Trajectory) -> bool | str:
        seen = [c.name for c in t.tool_calls]
        return seen == list(names) or f"expected the calls {list(names)}; tools called: {seen}"

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


def approval_requested(name: str) -> Assertion:
    """Tool `name` was parked for a human's decision."""

    def check(t: Trajectory) -> bool | str:
        asked = [
            str(e.data.get("toolName"))
            for e in t.events
            if e.type == EventType.ACTION_APPROVAL_REQUESTED
        ]
        return name in asked or f"no approval requested for {name}; asked: {asked or 'none'}"

    return check


def message_received(*, source: str | None = None, contains: str | None = None) -> Assertion:
    """A message arrived (from `source`: "http", "reminder", "schedule", ...)."""

    def check(t: Trajectory) -> bool | str:
        for e in t.events:
            if e.type != EventType.MESSAGE_RECEIVED:
                continue
            if source is not None and e.data.get("source") != source:
                continue
            if (
                contains is not None
                and contains.lower() not in str(e.data.get("message", "")).lower()
            ):
                continue
            return True
        seen = [str(e.data.get("source")) for e in t.events if e.type == EventType.MESSAGE_RECEIVED]
        return f"no message received (source={source!r}, contains={contains!r}); sources: {seen}"

    return check


def turns_completed(count: int) -> Assertion:
    """Exactly `count` turns completed."""

    def check(t: Trajectory) -> bool | str:
        done = sum(1 for e in t.events if e.type == EventType.TURN_COMPLETED)
        return done == count or f"expected {count} completed turn(s), got {done}"

    return check


def stream_intact() -> Assertion:
    """What the client read across dropped connections is the session's stream: every index
    once, in order, nothing missing, nothing repeated."""

    def check(t: Trajectory) -> bool | str:
        if not t.streamed:
            return "nothing was streamed (use say(..., cut_after=N))"
        seen = [e.index for e in t.streamed]
        if len(set(seen)) != len(seen):
            return f"duplicate events in the stream: {seen}"
        if seen != list(range(seen[0], seen[0] + len(seen))):
            return f"gap in the stream: {seen}"
        stored = {e.index: e for e in t.events}
        if any(stored.get(e.index) != e for e in t.streamed):
            return "streamed events differ from the stored ones"
        return True

    return check


def succeeded() -> Assertion:
    """No turn or session failed."""

    def check(t: Trajectory) -> bool | str:
        return not t.failed or "the turn failed"

    return check


Trials = int | Literal["auto"]


def check_trials(value: object) -> Trials:
    """A trial count (>= 1) or "auto"; `ValueError` otherwise."""
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"trials must be a positive integer or 'auto', got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class EvalDefinition:
    """One eval case: the message(s) sent, the assertions, and tags to select it by."""

    messages: tuple[str, ...]
    assertions: tuple[Assertion, ...]
    tags: tuple[str, ...] = ()
    description: str | None = None
    timeout: float | None = None
    steps: tuple[EvalStep, ...] = ()
    trials: Trials | None = None  # None: the run's or the config's

    @property
    def script(self) -> tuple[EvalStep, ...]:
        """The steps the runner plays: `steps`, or one `say` per message."""
        return self.steps or tuple(Say(m) for m in self.messages)

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
    message: str | Sequence[str] | None = None,
    steps: Sequence[EvalStep | str] | None = None,
    assertions: Sequence[Assertion] = (),
    tags: Sequence[str] = (),
    description: str | None = None,
    timeout: float | None = None,
    trials: Trials | None = None,
) -> EvalDefinition:
    """Define an eval: a message (several are follow-ups of one session) or a script of
    `steps` (messages, approvals, clock advances, interrupts; see `eval_steps`)."""
    if (message is None) == (steps is None):
        raise ValueError("define_eval needs exactly one of message= or steps=")
    script = tuple(as_step(s) for s in steps) if steps is not None else ()
    if steps is not None:
        messages = tuple(s.text for s in script if isinstance(s, Say))
        if not script or not isinstance(script[0], Say):
            raise ValueError("an eval's steps must start with a message (say(...))")
    else:
        messages = (message,) if isinstance(message, str) else tuple(message or ())
    if not messages or not all(isinstance(m, str) and m.strip() for m in messages):
        raise ValueError("define_eval needs a non-empty message")
    if trials is not None:
        trials = check_trials(trials)
    for a in assertions:
        if not callable(a):
            raise TypeError("every assertion must be callable (trajectory) -> ...")
    return EvalDefinition(
        messages=messages,
        assertions=tuple(assertions),
        tags=tuple(tags),
        description=description,
        timeout=timeout,
        steps=script,
        trials=trials,
    )


@dataclass(frozen=True, slots=True)
class EvalsConfig:
    """Settings of an eval run (`evals/evals.config.py`)."""

    max_concurrency: int = 4
    timeout: float = 300.0
    model: str | None = None  # None: the agent's own model
    options: dict[str, Any] = field(default_factory=dict)
    trials: Trials = 1
    max_trials: int = 10  # the cap of trials="auto"
    flaky_fails: bool = False  # whether a flaky case fails the run
    max_playground_runs: int = 20  # runs the HTTP routes keep in memory
    persist_runs: bool = False  # store runs beside the sessions (they survive a restart)


def define_evals_config(
    *,
    max_concurrency: int = 4,
    timeout: float = 300.0,
    model: str | None = None,
    trials: Trials = 1,
    max_trials: int = 10,
    flaky_fails: bool = False,
    max_playground_runs: int = 20,
    persist_runs: bool = False,
) -> EvalsConfig:
    """Define how evals run: cases at once, per-case timeout, optional model, trials per
    case (a number or "auto", capped by `max_trials`), whether `flaky` fails the run, and
    how the HTTP routes keep runs (`max_playground_runs` in memory, or `persist_runs`)."""
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if max_trials < 1 or max_playground_runs < 1:
        raise ValueError("max_trials and max_playground_runs must be at least 1")
    return EvalsConfig(
        max_concurrency=max_concurrency,
        timeout=timeout,
        model=model,
        trials=check_trials(trials),
        max_trials=max_trials,
        flaky_fails=flaky_fails,
        max_playground_runs=max_playground_runs,
        persist_runs=persist_runs,
    )
