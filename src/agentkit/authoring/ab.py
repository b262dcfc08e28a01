"""`define_ab`: a live A/B experiment with sticky, weighted variants.

    ab = define_ab(
        variants={
            "control": variant(weight=1),
            "concise": variant(weight=1, instructions="Answer in one sentence."),
        },
    )

Each new session is enrolled once (an `ab.assigned` event) and keeps its variant for life:
the choice is a hash of the experiment name and the session id, so it needs no storage and
is the same on every host. A variant may append `instructions` to the agent's instructions
and/or override its `model`. Metrics are folded from the event stream.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Variant:
    """One arm: its share of sessions and what it changes."""

    weight: float = 1.0
    instructions: str | None = None  # appended to the composed instructions
    model: str | None = None  # replaces the agent's model for enrolled sessions


def variant(
    *, weight: float = 1.0, instructions: str | None = None, model: str | None = None
) -> Variant:
    """Declare a variant. `weight` is relative (1 and 3 means 25% / 75%)."""
    if weight <= 0:
        raise ValueError("variant weight must be positive")
    return Variant(weight=float(weight), instructions=instructions, model=model)


@dataclass(frozen=True, slots=True)
class AbDefinition:
    """An experiment. `name` (when set) overrides the name taken from the file."""

    variants: Mapping[str, Variant]
    name: str | None = None
    description: str | None = None
    on_sample: Callable[..., Any] | None = None  # observe-only, called with folded samples

    def assign(self, experiment: str, session_id: str) -> str:
        """The sticky variant of a session: deterministic in (experiment, session id)."""
        digest = hashlib.sha256(f"{experiment}\x00{session_id}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64
        total = sum(v.weight for v in self.variants.values())
        acc = 0.0
        names = sorted(self.variants)
        for key in names:
            acc += self.variants[key].weight / total
            if point < acc:
                return key
        return names[-1]


def define_ab(
    *,
    variants: Mapping[str, Variant | Mapping[str, Any]],
    name: str | None = None,
    description: str | None = None,
    on_sample: Callable[..., Any] | None = None,
) -> AbDefinition:
    """Define an experiment with at least two variants (values: `variant(...)` or dicts)."""
    if len(variants) < 2:
        raise ValueError("define_ab needs at least two variants")
    built: dict[str, Variant] = {}
    for key, value in variants.items():
        if not key or not key.replace("-", "_").isidentifier():
            raise ValueError(f"variant name {key!r} must be a simple identifier")
        built[key] = value if isinstance(value, Variant) else variant(**dict(value))
    if on_sample is not None and not callable(on_sample):
        raise TypeError("on_sample must be callable")
    return AbDefinition(variants=built, name=name, description=description, on_sample=on_sample)
