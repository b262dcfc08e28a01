"""A/B enrollment at session creation, and what an enrolled session's arms change.

`enroll` picks each experiment's variant when a session is created (one `ab.assigned` per
experiment, recorded right after `session.started`). `Arms.of` folds those events back at
turn time and applies the variants: instructions appended to the system prompt, the model
and `max_steps` replaced, the tool table narrowed. The choice itself is
`AbDefinition.assign`, a hash: no storage, the same answer on every host.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from agentkit.authoring.ab import AbDefinition, Variant
from agentkit.events import AbAssigned, Event, EventType
from agentkit.project.manifest import Manifest

log = logging.getLogger("agentkit.ab")


class AbSource(Protocol):
    """What enrollment needs of a bundle: the experiment definitions by name."""

    def ab(self, name: str) -> AbDefinition | None: ...


def experiments(manifest: Manifest, bundle: AbSource) -> dict[str, AbDefinition]:
    """The agent's experiments by name (those whose definition can be loaded)."""
    if not manifest.abs:
        return {}
    out: dict[str, AbDefinition] = {}
    for spec in manifest.abs:
        definition = bundle.ab(spec.name)
        if isinstance(definition, AbDefinition):
            out[spec.name] = definition
    return out


def enroll(
    defs: Mapping[str, AbDefinition],
    session_id: str,
    principal: str | None,
    paused: Mapping[str, Collection[str]] | None = None,
) -> list[AbAssigned]:
    """One `ab.assigned` per experiment, in name order; `paused` arms are skipped (their
    share goes to the experiment's control arm)."""
    paused = paused or {}
    out: list[AbAssigned] = []
    for name in sorted(defs):
        ab = defs[name]
        key = principal if ab.sticky == "principal" and principal else session_id
        if ab.sticky == "principal":
            key = "principal:" + key
        out.append(AbAssigned(experiment=name, variant=ab.assign(name, key, paused.get(name, ()))))
    return out


def assignments(events: Iterable[Event]) -> dict[str, str]:
    """`{experiment: variant}` from a session's `ab.assigned` events (first one wins)."""
    out: dict[str, str] = {}
    for ev in events:
        if ev.type == EventType.AB_ASSIGNED:
            out.setdefault(str(ev.data.get("experiment")), str(ev.data.get("variant")))
        elif ev.type == EventType.MESSAGE_RECEIVED:
            break  # enrollment is recorded before the first message
    return out


@dataclass(frozen=True, slots=True)
class Arms:
    """What a session's variants change, merged in experiment-name order."""

    abs: dict[str, str] = field(default_factory=dict)
    instructions: tuple[str, ...] = ()
    model: str | None = None
    max_steps: int | None = None
    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()

    @classmethod
    def of(cls, events: Iterable[Event], defs: Mapping[str, AbDefinition]) -> Arms:
        chosen = assignments(events)
        if not chosen:  # most sessions: in no experiment
            return cls(abs=chosen)
        picked: list[Variant] = []
        for name in sorted(chosen):
            ab = defs.get(name)
            v = ab.variants.get(chosen[name]) if ab is not None else None
            if v is None:
                log.warning("session enrolled in unknown A/B arm %s=%s", name, chosen[name])
                continue
            picked.append(v)
        allow: frozenset[str] | None = None
        for v in picked:
            if v.tools is not None:
                allow = frozenset(v.tools) if allow is None else allow & frozenset(v.tools)
        return cls(
            abs=chosen,
            instructions=tuple(v.instructions for v in picked if v.instructions),
            model=next((v.model for v in reversed(picked) if v.model), None),
            max_steps=next((v.max_steps for v in reversed(picked) if v.max_steps), None),
            allow=allow,
            deny=frozenset(t for v in picked for t in v.deny_tools),
        )

    def system(self, base: str) -> str:
        """The system prompt with the variants' instructions appended."""
        if not self.instructions:
            return base
        return "\n\n".join([base, *self.instructions])

    def keep_tool(self, name: str) -> bool:
        return name not in self.deny and (self.allow is None or name in self.allow)


__all__ = ["AbSource", "Arms", "assignments", "enroll", "experiments"]
