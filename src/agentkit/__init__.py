"""agentkit: define an AI agent as a folder, serve it locally, deploy it on AWS Lambda."""

from typing import TYPE_CHECKING, Any

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
from agentkit.authoring.schedules import ScheduleDefinition, define_schedule
from agentkit.authoring.skills import SkillDefinition, define_skill
from agentkit.authoring.tools import ToolDefinition, define_tool

if TYPE_CHECKING:
    from agentkit.hosts.embedded import serve

__version__ = "0.1.0"

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


def __getattr__(name: str) -> Any:
    # `agentkit.serve` pulls in the whole local host (engine, server, uvicorn): loaded on
    # first use, so importing the authoring API (and a Lambda cold start) stays cheap.
    if name == "serve":
        from agentkit.hosts.embedded import serve

        return serve
    raise AttributeError(f"module 'agentkit' has no attribute {name!r}")
