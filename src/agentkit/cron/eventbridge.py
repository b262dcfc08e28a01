"""Standard 5-field UTC cron and timer specs, written the way EventBridge Scheduler wants them.

EventBridge cron has six fields, `cron(minutes hours day-of-month month day-of-week year)`,
numbers Sunday as 1 (standard cron: 0 or 7), and requires exactly one of day-of-month and
day-of-week to be `?`. Standard cron ORs the two day fields when both are restricted
("the 1st, or any Monday"); EventBridge cannot say that, so such an expression is reported
as untranslatable. That is a build diagnostic, never a deploy failure.

Each field is parsed into the set of values it matches and written back canonically: `*`
for the whole range, `start/step` for a sequence that runs to the end of the range, and
ranges and lists otherwise. Never hand the result to croniter: it reads a 6th field as
seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = [
    "UntranslatableCron",
    "at_expression",
    "cron_translation_error",
    "eventbridge_alternative",
    "rate_expression",
    "to_eventbridge_cron",
]


class UntranslatableCron(ValueError):
    """The expression is not valid 5-field cron, or EventBridge cannot express it."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] stands for low + i


_MINUTE = _Field("minute", 0, 59)
_HOUR = _Field("hour", 0, 23)
_DOM = _Field("day-of-month", 1, 31)
_MONTH = _Field(
    "month",
    1,
    12,
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
)
# 7 is accepted as a second Sunday and folded onto 0 after parsing.
_DOW = _Field("day-of-week", 0, 7, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"))

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def cron_translation_error(expr: str) -> str | None:
    """A message saying why `expr` cannot run on EventBridge, or None when it can."""
    try:
        to_eventbridge_cron(expr)
    except UntranslatableCron as exc:
        return str(exc)
    return None


def eventbridge_alternative(expr: str) -> str | None:
    """A way to get what `expr` means with cron EventBridge can run, or None when unsure.

    Only for expressions that are valid locally (croniter's `L` and `#` included) but that
    `to_eventbridge_cron` refuses; the answer is advice for a person, written as one sentence.
    """
    parts = " ".join(str(expr).split()).split(" ")
    if len(parts) != 5:
        return None
    minute, hour, dom, month, dow = parts
    upper_dow = dow.upper()
    if "#" in upper_dow or "L" in upper_dow.replace("SAT", "").replace("SUN", ""):
        base, _, nth = upper_dow.replace("L", "").partition("#")
        which = (
            f"the day of the month is {7 * int(nth) - 6} to {7 * int(nth)}"
            if nth.isdigit() and 1 <= int(nth) <= 5
            else "it is the last such weekday of the month (the date plus 7 days is next month)"
        )
        return (
            f'schedule "{minute} {hour} * {month} {base or "*"}" with a handler '
            f"(agent/schedules/<id>.py) that returns early unless {which}"
        )
    if "L" in dom.upper() or "W" in dom.upper():
        return (
            f'schedule "{minute} {hour} 28-31 {month} *" with a handler (agent/schedules/'
            "<id>.py) that returns early unless tomorrow is the 1st"
        )
    if dom != "*" and dow != "*":
        if _covers(dow, _DOW, set(range(7))):
            return f'"{minute} {hour} {dom} {month} *"'
        if _covers(dom, _DOM, _full(_DOM)):
            return f'"{minute} {hour} * {month} {dow}"'
        return (
            f'two schedules, "{minute} {hour} {dom} {month} *" and '
            f'"{minute} {hour} * {month} {dow}", which fire on the same days together'
        )
    return None


def to_eventbridge_cron(expr: str) -> str:
    """Translate standard 5-field UTC cron into an EventBridge `cron(...)` expression.

    Raises `UntranslatableCron` with a message a person can act on.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise UntranslatableCron("cron expression is empty")
    text = " ".join(expr.split())
    text = _MACROS.get(text.lower(), text)
    if text.startswith("@"):
        raise UntranslatableCron(f"cron macro {text!r} has no EventBridge equivalent")
    parts = text.split(" ")
    if len(parts) != 5:
        raise UntranslatableCron(
            f"cron {expr!r} has {len(parts)} fields; expected 5 (minute hour day month weekday)"
        )
    minute = _parse(parts[0], _MINUTE)
    hour = _parse(parts[1], _HOUR)
    dom = _parse(parts[2], _DOM)
    month = _parse(parts[3], _MONTH)
    dow = {0 if d == 7 else d for d in _parse(parts[4], _DOW)}

    dom_all = dom == _full(_DOM)
    dow_all = dow == set(range(7))
    if not dom_all and not dow_all:
        raise UntranslatableCron(
            f"cron {expr!r} restricts both day-of-month and day-of-week; standard cron fires "
            "when either matches, which EventBridge cannot express (it needs one of them "
            "unrestricted). Split it into two schedules."
        )
    if dom_all and dow_all:
        day_fields = ("*", "?")
    elif dow_all:
        if parts[4] != "*":
            _reject_explicit_full(expr, "day-of-week")
        day_fields = (_render(dom, _DOM), "?")
    else:
        if parts[2] != "*":
            _reject_explicit_full(expr, "day-of-month")
        day_fields = ("?", _render_dow(dow))
    return (
        f"cron({_render(minute, _MINUTE)} {_render(hour, _HOUR)} {day_fields[0]} "
        f"{_render(month, _MONTH)} {day_fields[1]} *)"
    )


def _reject_explicit_full(expr: str, field: str) -> None:
    # `0 0 1 * 0-6` (or `*/1`) is "the 1st OR any weekday", so every day, to croniter (the
    # local scheduler), but "the 1st" to Vixie cron and to anyone reading it as AND; refuse
    # rather than deploy something that fires differently from `agentkit serve`.
    raise UntranslatableCron(
        f"cron {expr!r} lists every {field} explicitly while restricting the other day "
        f"field, which cron implementations read differently; write the {field} as '*'"
    )


def rate_expression(seconds: float) -> str:
    """EventBridge `rate(...)` for a repeat interval (whole minutes, at least one)."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise ValueError(f"interval must be positive, got {seconds}")
    minutes = max(1, math.ceil(seconds / 60))
    for unit, size in (("day", 1440), ("hour", 60)):
        if minutes % size == 0:
            count = minutes // size
            return f"rate({count} {unit}{'s' if count != 1 else ''})"
    return f"rate({minutes} minute{'s' if minutes != 1 else ''})"


def at_expression(when: datetime) -> str:
    """EventBridge one-shot `at(...)` for an instant (evaluated in UTC, whole seconds)."""
    if when.tzinfo is None:
        raise ValueError("at() needs a timezone-aware datetime")
    return f"at({when.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})"


# -- parsing ---------------------------------------------------------------------------


def _full(field: _Field) -> set[int]:
    return set(range(field.low, field.high + 1))


def _covers(text: str, field: _Field, every: set[int]) -> bool:
    try:
        values = _parse(text, field)
    except UntranslatableCron:
        return False
    return {0 if v == 7 and field is _DOW else v for v in values} >= every


def _parse(text: str, field: _Field) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise UntranslatableCron(f"empty list item in {field.name} field {text!r}")
        values |= _parse_item(item, field)
    return values


def _parse_item(item: str, field: _Field) -> set[int]:
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise UntranslatableCron(f"bad step {step_text!r} in {field.name} field {item!r}")
        step = int(step_text)
    high = 6 if field is _DOW and base == "*" else field.high
    if base == "*":
        start, end = field.low, high
    elif "-" in base:
        left, _, right = base.partition("-")
        start, end = _value(left, field), _value(right, field)
        if start > end:
            raise UntranslatableCron(
                f"range {base!r} in {field.name} field runs backwards; write it as a list"
            )
    else:
        start = _value(base, field)
        # Vixie cron reads `5/10` as `5-<max>/10`.
        end = high if slash else start
    return set(range(start, end + 1, step))


def _value(token: str, field: _Field) -> int:
    upper = token.upper()
    if field.names and upper in field.names:
        return field.low + field.names.index(upper)
    if not token.isdigit():
        raise UntranslatableCron(
            f"{token!r} is not a valid {field.name} value"
            + (" (L, W, # and ? are not standard cron)" if _extension(upper) else "")
        )
    number = int(token)
    if not field.low <= number <= field.high:
        raise UntranslatableCron(f"{field.name} value {number} is outside {field.low}-{field.high}")
    return number


def _extension(token: str) -> bool:
    # croniter's `L` (last), `W` (weekday) and `#` (nth weekday), and Quartz's `?`.
    return "#" in token or token.strip("0123456789") in {"L", "W", "LW", "?"}


# -- rendering -------------------------------------------------------------------------


def _render(values: set[int], field: _Field) -> str:
    if values == _full(field):
        return "*"
    ordered = sorted(values)
    first = ordered[0]
    if len(ordered) >= 3:
        step = ordered[1] - first
        expected = list(range(first, field.high + 1, step))
        if step > 1 and ordered == expected:
            return f"{first}/{step}"
    return _ranges(ordered)


def _render_dow(days: set[int]) -> str:
    # EventBridge numbers Sunday as 1; steps are written out as lists.
    return _ranges(sorted(d + 1 for d in days))


def _ranges(ordered: list[int]) -> str:
    chunks: list[str] = []
    start = prev = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        chunks.append(str(start) if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ",".join(chunks)
