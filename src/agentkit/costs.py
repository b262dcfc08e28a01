"""What a model call cost: a price table per model id, and the arithmetic.

Prices are US dollars per million tokens, with separate rates for input, output, cache
reads and cache writes. The shipped table covers the providers' current models; an agent
overrides or extends it with `define_agent(prices={...})`, and a host with a JSON file named
by `AGENTKIT_PRICES_FILE` (same shape). A model with no known price has no cost: callers
leave `costUsd` out rather than report a zero that is not true.

Model ids are matched exactly first (`anthropic:claude-sonnet-4-5`), then by the model part
with a provider's decorations removed (Bedrock's `us.anthropic.` prefix and `-v1:0` suffix,
a `-20250929` date), then by the longest table key that the model name starts with.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.events import Usage

PRICES_FILE_ENV = "AGENTKIT_PRICES_FILE"


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: Usage) -> float:
        """The dollar cost of `usage` at this price (rounded to a micro-dollar)."""
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000
        return round(total, 6)


def _p(i: float, o: float, cr: float, cw: float) -> Price:
    return Price(input=i, output=o, cache_read=cr, cache_write=cw)


# Published list prices (USD per million tokens). Keys are model names without provider;
# the lookup also accepts them with a provider prefix. Override what your account pays.
DEFAULT_PRICES: dict[str, Price] = {
    # Anthropic (also served by Bedrock): cache write is the 5-minute rate.
    "claude-opus-4-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": _p(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4": _p(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4": _p(3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": _p(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.0, 0.08, 1.0),
    # OpenAI: cached input is the cache-read rate; there is no cache-write charge.
    "gpt-5": _p(1.25, 10.0, 0.125, 0.0),
    "gpt-5-mini": _p(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": _p(0.05, 0.40, 0.005, 0.0),
    "gpt-4.1": _p(2.0, 8.0, 0.50, 0.0),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10, 0.0),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025, 0.0),
    "gpt-4o": _p(2.50, 10.0, 1.25, 0.0),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075, 0.0),
    "o3": _p(2.0, 8.0, 0.50, 0.0),
    "o4-mini": _p(1.10, 4.40, 0.275, 0.0),
    # Amazon Nova on Bedrock.
    "amazon.nova-pro": _p(0.80, 3.20, 0.20, 0.0),
    "amazon.nova-lite": _p(0.06, 0.24, 0.015, 0.0),
    "amazon.nova-micro": _p(0.035, 0.14, 0.00875, 0.0),
}

_BEDROCK_REGION = re.compile(r"^(?:us|eu|apac|global|jp|au)\.")
_VERSION_SUFFIX = re.compile(r"(?:-v\d+(?::\d+)?)$")
_DATE_SUFFIX = re.compile(r"-\d{8}$")


def parse_price(raw: Any) -> Price:
    """A price from `{"input", "output", "cacheRead"?, "cacheWrite"?}` (snake_case too)."""
    if isinstance(raw, Price):
        return raw
    if not isinstance(raw, Mapping):
        raise ValueError("a price is a mapping with input and output dollars per million")

    def num(*keys: str, required: bool = False) -> float:
        for key in keys:
            if key in raw:
                value = raw[key]
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise ValueError(f"price {key!r} must be a non-negative number")
                return float(value)
        if required:
            raise ValueError(f"a price needs {keys[0]!r} (dollars per million tokens)")
        return 0.0

    return Price(
        input=num("input", required=True),
        output=num("output", required=True),
        cache_read=num("cacheRead", "cache_read"),
        cache_write=num("cacheWrite", "cache_write"),
    )


def parse_prices(raw: Mapping[str, Any] | None) -> dict[str, Price]:
    """Validate a `{model id: price}` mapping (raises `ValueError` naming the bad entry)."""
    out: dict[str, Price] = {}
    for model_id, value in (raw or {}).items():
        try:
            out[str(model_id)] = parse_price(value)
        except ValueError as exc:
            raise ValueError(f"prices[{model_id!r}]: {exc}") from None
    return out


def _model_name(model_id: str) -> str:
    name = model_id.split(":", 1)[1] if ":" in model_id.split(".", 1)[0] else model_id
    if name.startswith(("bedrock:", "anthropic:", "openai:")):
        name = name.split(":", 1)[1]
    name = _BEDROCK_REGION.sub("", name)
    if name.startswith("anthropic."):
        name = name[len("anthropic.") :]
    name = _VERSION_SUFFIX.sub("", name)
    return _DATE_SUFFIX.sub("", name)


class PriceTable:
    """Prices by model id: the shipped table under the host's file under the agent's own."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES)
        self._prices.update(overrides or {})
        # Lookups by model id: the table never changes, and a turn prices every step.
        self._found: dict[str, Price | None] = {}

    @classmethod
    def for_agent(cls, options: Mapping[str, Any] | None = None) -> PriceTable:
        """The table an agent runs with: defaults, then `AGENTKIT_PRICES_FILE`, then the
        `prices` option of `define_agent`."""
        merged: dict[str, Price] = {}
        path = os.environ.get(PRICES_FILE_ENV)
        if path:
            merged.update(parse_prices(json.loads(Path(path).read_text(encoding="utf-8"))))
        merged.update(parse_prices((options or {}).get("prices")))
        return cls(merged)

    def price(self, model_id: str | None) -> Price | None:
        """The price of a model, or None when it is not known."""
        if not model_id:
            return None
        try:
            return self._found[model_id]
        except KeyError:
            pass
        found = self._lookup(model_id)
        if len(self._found) < _LOOKUPS_KEPT:
            self._found[model_id] = found
        return found

    def _lookup(self, model_id: str) -> Price | None:
        exact = self._prices.get(model_id)
        if exact is not None:
            return exact
        name = _model_name(model_id)
        if name in self._prices:
            return self._prices[name]
        best = max((k for k in self._prices if name.startswith(k + "-")), key=len, default=None)
        return self._prices[best] if best is not None else None

    def cost(self, model_id: str | None, usage: Usage) -> float | None:
        """Dollars for `usage` on `model_id`; None when the price is unknown."""
        price = self.price(model_id)
        return price.cost(usage) if price is not None else None


_LOOKUPS_KEPT = 256
# The tables agents run with, by `id` of their options (kept in the entry, so the id is not
# reused while it is cached), with the prices file and its stat they were built from.
_AGENT_TABLES: dict[int, tuple[object, str | None, tuple[int, int, int] | None, PriceTable]] = {}
_AGENT_TABLES_KEPT = 64


def agent_prices(options: Mapping[str, Any] | None = None) -> PriceTable:
    """`PriceTable.for_agent(options)`, built once per options object and prices file.

    A turn prices its steps with this: the table is built again only when the agent's
    options are another object (a reloaded agent), `AGENTKIT_PRICES_FILE` names another
    file, or that file changed (its modification time, size or inode). Options are read,
    never changed in place, by the engine."""
    path = os.environ.get(PRICES_FILE_ENV) or None
    stamp: tuple[int, int, int] | None = None
    if path is not None:
        try:
            st = os.stat(path)
        except OSError:
            return PriceTable.for_agent(options)  # which says what is wrong with the file
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _AGENT_TABLES.get(id(options))
    if cached is not None and cached[0] is options and cached[1] == path and cached[2] == stamp:
        return cached[3]
    table = PriceTable.for_agent(options)
    if len(_AGENT_TABLES) >= _AGENT_TABLES_KEPT:
        _AGENT_TABLES.clear()
    _AGENT_TABLES[id(options)] = (options, path, stamp, table)
    return table


_BUDGET_KEYS = (
    "turn_tokens",
    "turn_usd",
    "session_tokens",
    "session_usd",
    "principal_daily_tokens",
    "principal_daily_usd",
)


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits per turn and per session, in tokens and/or dollars (None: no limit)."""

    turn_tokens: int | None = None
    turn_usd: float | None = None
    session_tokens: int | None = None
    session_usd: float | None = None
    principal_daily_tokens: int | None = None  # per caller per UTC day, on every surface
    principal_daily_usd: float | None = None
    # How long a "budget exceeded: continue?" approval waits for an answer before the
    # turn ends as failed (None: DEFAULT_BUDGET_ANSWER_SECONDS). Not a limit itself.
    approval_timeout_s: float | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, k) is None for k in _BUDGET_KEYS)


DEFAULT_BUDGET_ANSWER_SECONDS = 24 * 3600.0
_BUDGET_OPTIONS = (*_BUDGET_KEYS, "approval_timeout_s")


def parse_budget(raw: Any) -> Budget:
    """A `Budget` from `define_agent(budget=...)` (camelCase keys accepted too)."""
    if raw is None:
        return Budget()
    if not isinstance(raw, Mapping):
        raise ValueError("budget must be a mapping such as {'turn_usd': 0.5}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        snake = "".join("_" + c.lower() if c.isupper() else c for c in str(key))
        if snake not in _BUDGET_OPTIONS:
            raise ValueError(f"unknown budget key {key!r}; use {', '.join(_BUDGET_OPTIONS)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"budget {key!r} must be a positive number")
        values[snake] = int(value) if snake.endswith("tokens") else float(value)
    return Budget(**values)


def add_costs(a: float | None, b: float | None) -> float | None:
    """Sum two costs where None means unknown: unknown plus anything stays unknown."""
    if a is None or b is None:
        return None
    return round(a + b, 6)


__all__ = [
    "DEFAULT_BUDGET_ANSWER_SECONDS",
    "DEFAULT_PRICES",
    "PRICES_FILE_ENV",
    "Budget",
    "Price",
    "PriceTable",
    "add_costs",
    "agent_prices",
    "parse_budget",
    "parse_prices",
]
