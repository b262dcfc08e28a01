"""agentkit: define an AI agent as a folder, serve it locally, deploy it on AWS Lambda."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.authoring.ab import (
        AbConfig,
        AbDefinition,
        Variant,
        define_ab,
        define_ab_config,
        variant,
    )
    from agentkit.authoring.agent import (
        AgentDefinition,
        InstructionsDefinition,
        define_agent,
        define_instructions,
    )
    from agentkit.authoring.channels import (
        ChannelContext,
        ChannelDefinition,
        ChannelEventContext,
        Route,
        define_channel,
        route,
    )
    from agentkit.authoring.contexts import (
        HookContext,
        HostServices,
        ReminderTick,
        ScheduleContext,
        SessionInfo,
        ToolContext,
    )
    from agentkit.authoring.evals import (
        EvalDefinition,
        EvalsConfig,
        Trajectory,
        approval_requested,
        called_tool,
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
    from agentkit.authoring.hooks import HookDefinition, define_hook
    from agentkit.authoring.mcp import McpConnectionDefinition, define_mcp_connection
    from agentkit.authoring.reconcile import InDoubt
    from agentkit.authoring.schedules import ScheduleDefinition, define_schedule
    from agentkit.authoring.skills import SkillDefinition, define_skill
    from agentkit.authoring.tools import ToolDefinition, define_tool
    from agentkit.hosts.embedded import serve

from agentkit.version import __version__ as __version__

__all__ = [
    "AbConfig",
    "AbDefinition",
    "AgentDefinition",
    "ChannelContext",
    "ChannelDefinition",
    "ChannelEventContext",
    "EvalDefinition",
    "EvalsConfig",
    "HookContext",
    "HookDefinition",
    "HostServices",
    "InDoubt",
    "InstructionsDefinition",
    "McpConnectionDefinition",
    "ReminderTick",
    "Route",
    "ScheduleContext",
    "ScheduleDefinition",
    "SessionInfo",
    "SkillDefinition",
    "ToolContext",
    "ToolDefinition",
    "Trajectory",
    "Variant",
    "approval_requested",
    "called_tool",
    "define_ab",
    "define_ab_config",
    "define_agent",
    "define_channel",
    "define_eval",
    "define_evals_config",
    "define_hook",
    "define_instructions",
    "define_mcp_connection",
    "define_schedule",
    "define_skill",
    "define_tool",
    "did_not_call",
    "message_received",
    "reply_contains",
    "reply_matches",
    "route",
    "serve",
    "stream_intact",
    "succeeded",
    "turns_completed",
    "variant",
]


# Where each public name lives. Loaded on first use (PEP 562), so importing one part of the
# package (a Lambda handler, the store) does not load the whole authoring API, and
# `agentkit.serve` (the local host: engine, server, uvicorn) only when it is called for.
_EXPORTS: dict[str, str] = {
    "AbConfig": "agentkit.authoring.ab",
    "AbDefinition": "agentkit.authoring.ab",
    "AgentDefinition": "agentkit.authoring.agent",
    "ChannelContext": "agentkit.authoring.channels",
    "ChannelDefinition": "agentkit.authoring.channels",
    "ChannelEventContext": "agentkit.authoring.channels",
    "EvalDefinition": "agentkit.authoring.evals",
    "EvalsConfig": "agentkit.authoring.evals",
    "HookContext": "agentkit.authoring.contexts",
    "HookDefinition": "agentkit.authoring.hooks",
    "HostServices": "agentkit.authoring.contexts",
    "InDoubt": "agentkit.authoring.reconcile",
    "InstructionsDefinition": "agentkit.authoring.agent",
    "McpConnectionDefinition": "agentkit.authoring.mcp",
    "ReminderTick": "agentkit.authoring.contexts",
    "Route": "agentkit.authoring.channels",
    "ScheduleContext": "agentkit.authoring.contexts",
    "ScheduleDefinition": "agentkit.authoring.schedules",
    "SessionInfo": "agentkit.authoring.contexts",
    "SkillDefinition": "agentkit.authoring.skills",
    "ToolContext": "agentkit.authoring.contexts",
    "ToolDefinition": "agentkit.authoring.tools",
    "Trajectory": "agentkit.authoring.evals",
    "Variant": "agentkit.authoring.ab",
    "approval_requested": "agentkit.authoring.evals",
    "called_tool": "agentkit.authoring.evals",
    "define_ab": "agentkit.authoring.ab",
    "define_ab_config": "agentkit.authoring.ab",
    "define_agent": "agentkit.authoring.agent",
    "define_channel": "agentkit.authoring.channels",
    "define_eval": "agentkit.authoring.evals",
    "define_evals_config": "agentkit.authoring.evals",
    "define_hook": "agentkit.authoring.hooks",
    "define_instructions": "agentkit.authoring.agent",
    "define_mcp_connection": "agentkit.authoring.mcp",
    "define_schedule": "agentkit.authoring.schedules",
    "define_skill": "agentkit.authoring.skills",
    "define_tool": "agentkit.authoring.tools",
    "did_not_call": "agentkit.authoring.evals",
    "message_received": "agentkit.authoring.evals",
    "reply_contains": "agentkit.authoring.evals",
    "reply_matches": "agentkit.authoring.evals",
    "route": "agentkit.authoring.channels",
    "stream_intact": "agentkit.authoring.evals",
    "succeeded": "agentkit.authoring.evals",
    "turns_completed": "agentkit.authoring.evals",
    "variant": "agentkit.authoring.ab",
    "serve": "agentkit.hosts.embedded",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name != "serve":
        globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
