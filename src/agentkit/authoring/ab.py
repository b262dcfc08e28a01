"""`define_ab`: a live A/B experiment with sticky, weighted variants.

    ab = define_ab(
        variants={
            "control": variant(weight=1),
            "concise": variant(weight=1, instructions="Answer in one sentence."),
        },
    )

Each new session is enrolled once (an `ab.assigned` event) and keeps its variant for life:
the choice is a hash of the experiment name and the session id, so it needs no storage and
is the same on every host (`sticky="principal"` hashes the principal instead, so one user
sees one arm across sessions). A variant may append `instructions` to the agent's
instructions, override its `model` and `max_steps`, and narrow its tools (`tools` allows
only these, `deny_tools` removes these). Metrics are folded from the event stream.

`guardrails` name limits on a variant's per-turn means (`costUsd`, `failureRate`,
`deniedApprovalRate`, or any numeric metric of the fold): when a variant's confidence
sequence lies wholly above a limit, the variant is paused (new sessions go to `control`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class Variant:
    """One arm: its share of sessions and what it changes."""

    weight: float = 1.0
    instructions: str | None = None  # appended to the composed instructions
    model: str | None = None  # replaces the agent's model for enrolled sessions
    max_steps: int | None = None  # replaces the agent's max_steps
    tools: tuple[str, ...] | None = None  # only these tools (built-ins included) when set
    deny_tools: tuple[str, ...] = ()  # these tools are removed


def variant(
    *,
    weight: float = 1.0,
    instructions: str | None = None,
    model: str | None = None,
    max_steps: int | None = None,
    tools: Sequence[str] | None = None,
    deny_tools: Sequence[str] = (),
) -> Variant:
    """Declare a variant. `weight` is relative (1 and 3 means 25% / 75%)."""
    if weight <= 0:
        raise ValueError("variant weight must be positive")
    if max_steps is not None and max_steps < 1:
        raise ValueError("variant max_steps must be at least 1")
    return Variant(
        weight=float(weight),
        instructions=instructions,
        model=model,
        max_steps=max_steps,
        tools=tuple(tools) if tools is not None else None,
        deny_tools=tuple(deny_tools),
    )


@dataclass(frozen=True, slots=True)
class AbDefinition:
    """An experiment. `name` (when set) overrides the name taken from the file."""

    variants: Mapping[str, Variant]
    name: str | None = None
    description: str | None = None
    on_sample: Callable[..., Any] | None = None  # observe-only, called with folded samples
    sticky: Literal["session", "principal"] = "session"
    guardrails: Mapping[str, float] = field(default_factory=dict)
    control: str | None = None  # the arm paused variants fall back to (default: "control")
    min_samples: int = 30  # per arm, before any difference is reported

    @property
    def control_arm(self) -> str:
        if self.control is not None:
            return self.control
        return "control" if "control" in self.variants else sorted(self.variants)[0]

    def assign(self, experiment: str, session_id: str, paused: Collection[str] = ()) -> str:
        """The sticky variant for a key (a session id, or a principal with
        `sticky="principal"`): deterministic in (experiment, key). A paused variant's share
        goes to the control arm."""
        digest = hashlib.sha256(f"{experiment}\x00{session_id}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64
        total = sum(v.weight for v in self.variants.values())
        acc = 0.0
        names = sorted(self.variants)
        chosen = names[-1]
        for key in names:
            acc += self.variants[key].weight / total
            if point < acc:
                chosen = key
                break
        return self.control_arm if chosen in paused else chosen


def define_ab(
    *,
    variants: Mapping[str, Variant | Mapping[str, Any]],
    name: str | None = None,
    description: str | None = None,
    on_sample: Callable[..., Any] | None = None,
    sticky: Literal["session", "principal"] = "session",
    guardrails: Mapping[str, float] | None = None,
    control: str | None = None,
    min_samples: int = 30,
) -> AbDefinition:
    """Define an experiment with at least two variants (values: `variant(...)` or dicts)."""
    if sticky not in ("session", "principal"):
        raise ValueError("sticky must be 'session' or 'principal'")
    if min_samples < 2:
        raise ValueError("min_samples must be at least 2")
    if len(variants) < 2:
        raise ValueError("define_ab needs at least two variants")
    built: dict[str, Variant] = {}
    for key, value in variants.items():
        if not key or not key.replace("-", "_").isidentifier():
            raise ValueError(f"variant name {key!r} must be a simple identifier")
        built[key] = value if isinstance(value, Variant) else variant(**dict(value))
    if on_sample is not None and not callable(on_sample):
        raise TypeError("on_sample must be callable")
    if control is not None and control not in built:
        raise ValueError(f"control {control!r} is not one of the variants")
    limits = {str(k): float(v) for k, v in (guardrails or {}).items()}
    return AbDefinition(
        variants=built,
        name=name,
        description=description,
        on_sample=on_sample,
        sticky=sticky,
        guardrails=limits,
        control=control,
        min_samples=min_samples,
    )


@dataclass(frozen=True, slots=True)
class AbConfig:
    """Settings of the A/B surface (`agent/ab.config.py`).

    `max_playground_sessions` caps the per-session rows `GET /v1/abs` returns (the arm
    totals always cover every session). `durable_samples`: samples are folded from the
    durable event streams (always so here; reported for clients). `durable_snapshots`: on
    AWS, the hooks function keeps an incremental snapshot of the fold that the route reads.
    """

    max_playground_sessions: int = 50
    durable_samples: bool = True
    durable_snapshots: bool = True


def define_ab_config(
    *,
    max_playground_sessions: int = 50,
    durable_samples: bool = True,
    durable_snapshots: bool = True,
) -> AbConfig:
    """Define the A/B settings (see `AbConfig`)."""
    if max_playground_sessions < 1:
        raise ValueError("max_playground_sessions must be at least 1")
    return AbConfig(
        max_playground_sessions=max_playground_sessions,
        durable_samples=bool(durable_samples),
        durable_snapshots=bool(durable_snapshots),
    )
