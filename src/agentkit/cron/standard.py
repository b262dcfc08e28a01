"""Standard 5-field cron in UTC with minute granularity, and short durations ("20m", "2h").

croniter does the calendar arithmetic, but it is more permissive than the contract: it reads
a sixth field as seconds, accepts `@hourly`-style macros and Jenkins-style `H`. Those are
rejected here so an expression that works locally also translates to EventBridge.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from agentkit.events import iso_utc

__all__ = ["format_instant", "next_fire", "parse_duration", "parse_instant", "validate_cron"]

# Digits, names (jan, mon), ranges, steps, lists, `*`, and croniter's `L`/`#` extensions.
_FIELD_RE = re.compile(r"^[0-9A-Za-z*/,#-]+$")
_DURATION_RE = re.compile(r"(\d+)\s*([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The longest duration accepted: far beyond any reminder's use, far inside what datetime
# arithmetic can add to "now" without overflowing.
MAX_DURATION = timedelta(days=3660)


_RANGES = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)


def _out_of_range(fields: list[str]) -> str | None:
    """The first number outside its field's range, named with the field ("hour 25 is out of
    range 0-23"); steps (`/n`) and nth weekdays (`#n`) are counts, not values."""
    for field, (name, low, high) in zip(fields, _RANGES, strict=True):
        for part in field.split(","):
            values = part.split("/")[0].split("#")[0]
            for number in re.findall(r"\d+", values):
                if not low <= int(number) <= high:
                    return f"{name} {int(number)} is out of range {low}-{high}"
    return None


def validate_cron(expr: object) -> str | None:
    """Return why `expr` is not a valid 5-field UTC cron expression, or None when it is."""
    if not isinstance(expr, str) or not expr.strip():
        return "cron expression must be a non-empty string"
    fields = expr.split()
    if expr.strip().startswith("@"):
        return f"cron macros such as {fields[0]!r} are not supported; write the 5 fields"
    if len(fields) != 5:
        return (
            f"cron expression must have 5 fields (minute hour day-of-month month "
            f"day-of-week), got {len(fields)}: {expr.strip()!r}"
        )
    for field in fields:
        if not _FIELD_RE.fullmatch(field) or "H" in field.upper().replace("TH", ""):
            return f"invalid cron field {field!r} in {expr.strip()!r}"
    out_of_range = _out_of_range(fields)
    if out_of_range:
        return f"{out_of_range} in {expr.strip()!r}"
    # Imported here, not at the top: croniter (with dateutil and six) is costly to load and
    # a process that only answers requests (the API function) never needs it.
    from croniter import croniter

    if not croniter.is_valid(" ".join(fields)):
        return f"invalid cron expression {expr.strip()!r}"
    try:
        croniter(" ".join(fields), datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except Exception as exc:  # croniter raises several unrelated types for bad input
        return f"invalid cron expression {expr.strip()!r}: {exc}"
    return None


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def next_fire(expr: str, after: datetime) -> datetime:
    """The first whole minute strictly after `after` that `expr` matches, in UTC.

    A naive `after` is taken to be UTC. Raises `ValueError` for an invalid expression.
    """
    problem = validate_cron(expr)
    if problem is not None:
        raise ValueError(problem)
    from croniter import croniter

    start = _as_utc(after)
    result = croniter(" ".join(expr.split()), start).get_next(datetime)
    assert isinstance(result, datetime)
    return _as_utc(result).replace(second=0, microsecond=0)


def parse_duration(text: object) -> timedelta:
    """Parse "30s", "20m", "2h", "1d" (or a compound such as "1h30m") into a timedelta.

    Raises `ValueError` with a readable message for anything else, zero and anything over
    `MAX_DURATION` included (so adding it to a date never overflows).
    """
    if not isinstance(text, str):
        raise ValueError(f"duration must be a string such as '20m' or '2h', got {text!r}")
    compact = text.strip().lower().replace(" ", "")
    pos = 0
    seconds = 0
    for match in _DURATION_RE.finditer(compact):
        if match.start() != pos:
            break
        digits = match.group(1).lstrip("0") or "0"
        if len(digits) > 12:  # never build a huge int (or hit int()'s digit limit)
            raise ValueError(f"duration {text[:40]!r} is too long (at most {MAX_DURATION.days}d)")
        seconds += int(digits) * _UNITS[match.group(2)]
        pos = match.end()
    if not compact or pos != len(compact):
        raise ValueError(
            f"invalid duration {text!r}: use a number and a unit s, m, h or d, such as '20m'"
        )
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be longer than zero")
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"duration {text[:40]!r} is too long (at most {MAX_DURATION.days}d)")
    return timedelta(seconds=seconds)


def parse_instant(value: object) -> datetime:
    """An explicit fire time: an aware datetime, or ISO-8601 text (naive means UTC)."""
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"invalid time {value!r}: use ISO-8601 such as 2030-01-01T09:00Z"
            ) from None
        return _as_utc(parsed)
    raise ValueError(f"time must be a datetime or ISO-8601 text, got {value!r}")


# Reminder records keep their fire times in the form events use; one helper writes both.
format_instant = iso_utc
