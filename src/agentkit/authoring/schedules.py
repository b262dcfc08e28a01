"""`define_schedule`: cron-driven runs, either a markdown prompt or a `run` handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CATCH_UP_POLICIES = ("skip", "once", "all")


@dataclass(frozen=True, slots=True)
class ScheduleDefinition:
    """A 5-field UTC cron plus exactly one of `markdown` (a task prompt) or `run`."""

    cron: str
    markdown: str | None = None
    run: Callable[..., Any] | None = None
    catch_up: str = "once"

    @property
    def kind(self) -> str:
        return "markdown" if self.markdown is not None else "handler"


def define_schedule(
    *,
    cron: str,
    markdown: str | None = None,
    run: Callable[..., Any] | None = None,
    catch_up: str = "once",
) -> ScheduleDefinition:
    """Define a schedule. Exactly one of `markdown` or `run` must be given. `catch_up`
    (`"skip"`, `"once"` or `"all"`) says what to do with the slots missed while the host
    was down."""
    if (markdown is None) == (run is None):
        raise ValueError("define_schedule needs exactly one of markdown or run")
    if run is not None and not callable(run):
        raise TypeError("run must be callable")
    if catch_up not in CATCH_UP_POLICIES:
        raise ValueError(f"catch_up must be one of {', '.join(CATCH_UP_POLICIES)}")
    return ScheduleDefinition(cron=cron.strip(), markdown=markdown, run=run, catch_up=catch_up)
