"""agentkit: define an AI agent as a folder, serve it locally, deploy it on AWS Lambda."""

from agentkit.authoring.agent import (
    AgentDefinition,
    InstructionsDefinition,
    define_agent,
    define_instructions,
)
from agentkit.authoring.contexts import (
    HookContext,
    HostServices,
    ReminderTick,
    ScheduleContext,
    SessionInfo,
    ToolContext,
)
from agentkit.authoring.hooks import HookDefinition, define_hook
from agentkit.authoring.schedules import ScheduleDefinition, define_schedule
from agentkit.authoring.skills import SkillDefinition, define_skill
from agentkit.authoring.tools import ToolDefinition, define_tool

__version__ = "0.1.0"

__all__ = [
    "AgentDefinition",
    "HookContext",
    "HookDefinition",
    "HostServices",
    "InstructionsDefinition",
    "ReminderTick",
    "ScheduleContext",
    "ScheduleDefinition",
    "SessionInfo",
    "SkillDefinition",
    "ToolContext",
    "ToolDefinition",
    "define_agent",
    "define_hook",
    "define_instructions",
    "define_schedule",
    "define_skill",
    "define_tool",
]
