"""Replay recorded sessions against a bundle, with recorded model steps and tool results.

`replay_session(bundle, events)` runs a session's turns again through the real engine and
reports where the trajectory diverges (`ReplayReport`); `sources` reads sessions from a
state folder or a running host; `export` turns a session into an eval case.
"""

from agentkit.replay.recording import Recording, load_events, parse_events
from agentkit.replay.report import KINDS, Divergence, ReplayReport
from agentkit.replay.session import replay_session

__all__ = [
    "KINDS",
    "Divergence",
    "Recording",
    "ReplayReport",
    "load_events",
    "parse_events",
    "replay_session",
]
