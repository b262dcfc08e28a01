from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool

# A stand-in for the ticket system; a real helpdesk would call its API here.
TICKETS = {
    "IT-1": {"title": "VPN drops every hour", "status": "open", "owner": "network team"},
    "IT-2": {"title": "New laptop for Sam", "status": "waiting for delivery", "owner": "IT"},
}


class TicketInput(BaseModel):
    ticket: str = Field(description="Ticket id, such as IT-1")


@define_tool(description="Look up a helpdesk ticket by id.")
async def look_up_ticket(input: TicketInput, ctx: ToolContext) -> dict:
    found = TICKETS.get(input.ticket.strip().upper())
    return {"ticket": input.ticket, **found} if found else {"ticket": input.ticket, "found": False}
