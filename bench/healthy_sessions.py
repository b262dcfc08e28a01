"""Healthy long sessions for the loop breaker: the examples' evals, each conversation
continued with follow-ups on the offline `test` model, and how many the breaker stopped.

A session here is one example eval's script (its messages, approvals, clock steps, direct
calls) played through the real engine as `agentkit eval` plays it, then continued with
`follow_ups` more messages: the case's own messages again, in turn, so the same tool is
called with the same arguments turn after turn, as a user asking again would make it. The
breaker counts within one turn, so none of these sessions should ever be stopped; a stop
(`turn.failed` with `loop_detected`, or a parked `loop_guard` question) is a wrong one.

Used by `bench/bench_loop_guard.py` (200 sessions) and by a small CI test.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from agentkit.authoring.eval_steps import Say, say
from agentkit.evals.case import CaseHost
from agentkit.evals.steps import play
from agentkit.events import Event, EventType
from agentkit.models import resolve_model
from agentkit.project.bundle import AgentBundle

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GENERIC_FOLLOW_UP = "Thanks. Could you check that again?"
LOOP_STOP = "loop_detected"
LOOP_QUESTION = "loop_guard"


@dataclass
class Tally:
    """What a run of long sessions came to."""

    sessions: int = 0
    turns: int = 0
    stopped: list[str] = field(default_factory=list)  # "<example>/<case>: <evidence>"

    @property
    def share(self) -> float:
        return len(self.stopped) / self.sessions if self.sessions else 0.0


@dataclass(frozen=True)
class Case:
    example: str
    case_id: str
    bundle: AgentBundle

    @property
    def label(self) -> str:
        return f"{self.example}/{self.case_id}"


def example_cases(examples: Path = EXAMPLES) -> list[Case]:
    """Every eval case of every example project, in a stable order."""
    found: list[Case] = []
    for folder in sorted(p for p in examples.iterdir() if (p / "agent").is_dir()):
        bundle = AgentBundle.discover(folder)
        bundle.require_valid()
        found.extend(Case(folder.name, spec.id, bundle) for spec in bundle.manifest.evals)
    return found


def loop_stops(events: list[Event]) -> list[str]:
    """The loop breaker's stops in a session's events, each with its evidence."""
    stops: list[str] = []
    for event in events:
        if event.type == EventType.TURN_FAILED and event.data.get("error") == LOOP_STOP:
            stops.append(f"turn.failed {event.data.get('evidence')}")
        elif (
            event.type == EventType.ACTION_APPROVAL_REQUESTED
            and event.data.get("toolName") == LOOP_QUESTION
        ):
            stops.append(f"asked {event.data.get('arguments')}")
    return stops


async def run_long(case: Case, follow_ups: int, *, timeout: float = 120.0) -> tuple[int, list[str]]:
    """Play `case` and `follow_ups` more messages; its turn count and loop stops."""
    definition = case.bundle.evaluation(case.case_id)
    assert definition is not None, case.label
    script = definition.script
    asked = [step.text for step in script if isinstance(step, Say)] or [GENERIC_FOLLOW_UP]
    more = [say(text) for text in itertools.islice(itertools.cycle(asked), follow_ups)]
    host = CaseHost(case.bundle, lambda _id: resolve_model("test"))
    try:
        await host.open()
        state = await play((*script, *more), host, timeout=timeout)
        assert state.session_id is not None, case.label
        events = await host.events(state.session_id)
    finally:
        await host.aclose()
    turns = sum(e.type == EventType.TURN_STARTED for e in events)
    return turns, loop_stops(events)


async def measure(sessions: int, follow_ups: int, cases: list[Case] | None = None) -> Tally:
    """`sessions` long sessions, taking the example cases round-robin, one after another
    (the machine running this is shared; one at a time keeps the load flat)."""
    pool = cases if cases is not None else example_cases()
    tally = Tally()
    for case in itertools.islice(itertools.cycle(pool), sessions):
        turns, stops = await run_long(case, follow_ups)
        tally.sessions += 1
        tally.turns += turns
        tally.stopped.extend(f"{case.label}: {stop}" for stop in stops[:1])
    return tally
