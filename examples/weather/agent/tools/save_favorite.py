"""A harmless tool that asks first: it shows how a call waits for a person's approval."""

from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class FavoriteInput(BaseModel):
    city: str = Field(description="The city to remember as the user's favorite", min_length=1)


@define_tool(
    description="Save a city as the user's favorite (simulated: nothing is stored).",
    needs_approval=True,
)
async def save_favorite(input: FavoriteInput, ctx: ToolContext) -> dict[str, object]:
    # Nothing is written anywhere: the approval step is the point of this example tool.
    return {"favorite": input.city.strip(), "simulated": True}
