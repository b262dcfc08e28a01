"""Filesystem evals: run `evals/**/*.eval.py` cases as real turns through the engine.

What eval files import lives here too (the steps of a scripted case and the assertions), so
`from agentkit.evals import say, approve, advance` works; the runner, trials, JUnit output,
baseline comparison and the HTTP routes' service are in this package's modules.
"""

from __future__ import annotations

from agentkit.authoring.eval_steps import (
    Advance,
    CallTool,
    Decide,
    EvalStep,
    Interrupt,
    Say,
    advance,
    approve,
    call_tool,
    deny,
    interrupt,
    say,
)
from agentkit.authoring.evals import (
    EvalDefinition,
    EvalsConfig,
    Trajectory,
    approval_requested,
    called_tool,
    called_tools,
    define_eval,
    define_evals_config,
    did_not_call,
    message_received,
    reply_contains,
    reply_matches,
    stream_intact,
    succeeded,
    turns_completed,
)

__all__ = [
    "Advance",
    "CallTool",
    "Decide",
    "EvalDefinition",
    "EvalStep",
    "EvalsConfig",
    "Interrupt",
    "Say",
    "Trajectory",
    "advance",
    "approval_requested",
    "approve",
    "call_tool",
    "called_tool",
    "called_tools",
    "define_eval",
    "define_evals_config",
    "deny",
    "did_not_call",
    "interrupt",
    "message_received",
    "reply_contains",
    "reply_matches",
    "say",
    "stream_intact",
    "succeeded",
    "turns_completed",
]
