"""A Slack helpdesk agent for the pack's tests (served by `agentkit serve`, or built for
the Lambda handlers)."""

from __future__ import annotations

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
APPROVER = "U0LEAD"

SLACK_FILES = {
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(model="test", max_steps=6)
    """,
    "agent/instructions.md": "You are the helpdesk. Answer in the thread, briefly.\n",
    "agent/channels/slack.py": """
        from agentkit.channels.slack import slack_channel

        channel = slack_channel(approvers=["U0LEAD"])
    """,
    "agent/tools/get_weather.py": """
        from pydantic import BaseModel, Field
        from agentkit import ToolContext, define_tool


        class WeatherInput(BaseModel):
            city: str = Field(description="City name")


        @define_tool(description="Get the current weather for a city.")
        async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
            return {"city": input.city, "tempC": 21}
    """,
    "agent/tools/restart_service.py": """
        import os

        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class RestartInput(BaseModel):
            service: str = "billing"


        @define_tool(description="Restart a production service.", needs_approval=True)
        async def restart_service(input: RestartInput, ctx: ToolContext) -> dict:
            # The side effect the tests count: one line per run.
            with open(os.environ["RESTART_LOG"], "a", encoding="utf-8") as f:
                f.write(input.service + "\\n")
            return {"restarted": input.service}
    """,
    "agent/tools/remind_later.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class RemindInput(BaseModel):
            note: str = "follow up"


        @define_tool(description="Remind later about this ticket.")
        async def remind_later(input: RemindInput, ctx: ToolContext) -> dict:
            made = await ctx.host.reminders.create(
                purpose="follow_up", prompt="Time to check the ticket again.", delay="1h"
            )
            return {"reminderId": made.id}
    """,
    "agent/tools/slack_identity.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class Nothing(BaseModel):
            pass


        @define_tool(description="Ask Slack which identity the slack client uses.")
        async def slack_identity(input: Nothing, ctx: ToolContext) -> dict:
            answer = await ctx.host.slack.auth_test()
            return {"identityOk": bool(answer["ok"])}
    """,
}
