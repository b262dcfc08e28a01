"""The quickstart tool: current weather for a city, from simulated data."""

import hashlib

from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool

CONDITIONS = ("sunny", "partly cloudy", "overcast", "light rain", "windy")


class WeatherInput(BaseModel):
    city: str = Field(description="City name, e.g. Paris", min_length=1)


@define_tool(description="Get the current (simulated) weather for a city.")
async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict[str, object]:
    # A stable hash of the city gives the same answer every time, so evals can rely on it.
    seed = int.from_bytes(hashlib.sha256(input.city.strip().lower().encode()).digest()[:4], "big")
    return {
        "city": input.city.strip(),
        "tempC": seed % 35 - 5,
        "condition": CONDITIONS[seed % len(CONDITIONS)],
        "simulated": True,
    }
