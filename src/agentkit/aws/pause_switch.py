"""The agent's kill switch on AWS: an SSM parameter (`template.yaml`: KillSwitchParameter).

`on` (also `true`, `1`, `paused`) turns it on; anything else, or no parameter, is off. An
operator flips it without a deploy (`aws ssm put-parameter --overwrite --name ... --value
on`), or `agentkit pause-all` does through the API. Every function reads it at most once per
`SSM_CACHE` seconds, so a flip is seen everywhere within that, plus a turn's poll.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from agentkit.engine.fleet_switch import SwitchCache, SwitchState, switched_on
from agentkit.events import now_iso

ON_VALUES = frozenset({"on", "true", "1", "paused"})
# Longer than the local file's cache: every running turn polls the switch, and SSM's
# default throughput is 40 reads a second per account and region.
SSM_CACHE = 3.0


class SsmSwitch:
    """`PauseSwitch` over one SSM String parameter. Its value is `on`/`off`, optionally
    followed by a JSON object saying since when and by whom (`on {"since":..,"by":..}`)."""

    def __init__(self, client: Any, name: str, *, cache: float = SSM_CACHE) -> None:
        self._client = client
        self.name = name
        self._cached = SwitchCache(cache)

    async def read(self) -> SwitchState:
        now = time.monotonic()
        kept = self._cached.fresh(now)
        if kept is not None:
            return kept
        try:
            raw = await asyncio.to_thread(self._get)
        except Exception:
            # An unreadable switch keeps its last known state: a throttled read must not
            # lift a brake an operator pulled, nor pull one nobody did.
            return self._cached.keep(self._cached.state, now)
        return self._cached.keep(parse_value(raw), now)

    async def set(self, on: bool, *, by: str) -> SwitchState:
        value = "on " + json.dumps({"since": now_iso(), "by": by}) if on else "off"
        if on:
            current = parse_value(await asyncio.to_thread(self._get))
            if current.on:
                value = ""  # already on: keep who pulled it first
        if value:
            await asyncio.to_thread(
                self._client.put_parameter,
                Name=self.name,
                Value=value,
                Type="String",
                Overwrite=True,
            )
        self._cached.forget()
        return await self.read()

    def _get(self) -> str | None:
        try:
            answer = self._client.get_parameter(Name=self.name)
        except self._client.exceptions.ParameterNotFound:
            return None
        value = answer.get("Parameter", {}).get("Value")
        return value if isinstance(value, str) else None


def parse_value(raw: str | None) -> SwitchState:
    """The switch a parameter value says."""
    if raw is None:
        return SwitchState(False)
    head, _, rest = raw.strip().partition(" ")
    if head.lower() not in ON_VALUES:
        return SwitchState(False)
    return switched_on(rest)


__all__ = ["ON_VALUES", "SSM_CACHE", "SsmSwitch", "parse_value"]
