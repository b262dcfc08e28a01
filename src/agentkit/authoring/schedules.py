"""`define_schedule`: cron-driven runs, either a markdown prompt or a `run` handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ScheduleDefinition:
    """A 5-field UTC cron plus exactly one of `markdown` (a task prompt) or `run`."""

    cron: str
    markdown: str | None = None
    run: Callable[..., Any] | None = None

    @property
    def kind(self) -> str:
        return "markdown" if self.markdown is not None else "handler"


def define_schedule(
    *, cron: str, markdown: str | None = None, run: Callable[..., Any] | None = None
) -> ScheduleDefinition:
    """Define a schedule. Exactly one of `markdown` or `run` must be given."""
    if (markdown is None) == (run is None):
        raise ValueError("define_schedule needs exactly one of markdown or run")
    if run is not None and not callable(run):
        raise TypeError("run must be callable")
    return ScheduleDefinition(cron=cron.strip(), markdown=markdown, run=run)
