"""5-field UTC cron, minute granularity, and duration parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentkit.cron.standard import (
    format_instant,
    next_fire,
    parse_duration,
    parse_instant,
    validate_cron,
)

MONDAY = datetime(2030, 1, 7, tzinfo=UTC)  # 2030-01-07 is a Monday


@pytest.mark.parametrize(
    "expr", ["0 9 * * 1-5", "*/30 * * * *", "0 0 1 jan *", "15 14 * * MON-FRI", "0 0 L * *"]
)
def test_valid_five_field_expressions_pass(expr: str) -> None:
    assert validate_cron(expr) is None


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("0 0 * * * *", "5 fields"),  # croniter would read a 6th field as seconds
        ("* * * *", "5 fields"),
        ("@hourly", "macros"),
        ("61 * * * *", "out of range 0-59"),
        ("H * * * *", "invalid"),
        ("", "non-empty"),
        ("a b c d e", "invalid"),
    ],
)
def test_invalid_expressions_explain_why(expr: str, fragment: str) -> None:
    problem = validate_cron(expr)
    assert problem is not None and fragment in problem


def test_weekday_cadence_over_a_simulated_week_fires_five_times_at_nine() -> None:
    fires = []
    at = MONDAY - timedelta(minutes=1)
    while True:
        at = next_fire("0 9 * * 1-5", at)
        if at >= MONDAY + timedelta(days=7):
            break
        fires.append(at)
    assert [f.strftime("%a %H:%M") for f in fires] == [
        "Mon 09:00",
        "Tue 09:00",
        "Wed 09:00",
        "Thu 09:00",
        "Fri 09:00",
    ]


def test_every_thirty_minutes_over_a_week_is_336_firings() -> None:
    count, at = 0, MONDAY - timedelta(seconds=1)
    while (at := next_fire("*/30 * * * *", at)) < MONDAY + timedelta(days=7):
        count += 1
    assert count == 7 * 48


def test_next_fire_is_strictly_after_and_whole_minutes() -> None:
    at = datetime(2030, 1, 7, 9, 0, 0, tzinfo=UTC)
    assert next_fire("0 9 * * *", at) == at + timedelta(days=1)
    assert next_fire("* * * * *", at.replace(second=30)) == at + timedelta(minutes=1)


def test_next_fire_treats_naive_times_as_utc() -> None:
    assert next_fire("0 9 * * *", datetime(2030, 1, 7, 8, 0)) == datetime(
        2030, 1, 7, 9, 0, tzinfo=UTC
    )


def test_next_fire_rejects_invalid_expressions() -> None:
    with pytest.raises(ValueError, match="5 fields"):
        next_fire("0 0 * * * *", MONDAY)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("20m", 1200), ("2h", 7200), ("1d", 86400), ("1h30m", 5400)]
)
def test_durations_parse(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "20", "m", "2 weeks", "-5m", "0m", "20m junk", 5])
def test_bad_durations_are_a_clear_error(text: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_instants_parse_from_iso_text_with_z() -> None:
    assert parse_instant("2030-01-07T09:00Z") == datetime(2030, 1, 7, 9, tzinfo=UTC)


def test_instants_format_as_utc_with_milliseconds_and_z() -> None:
    paris = timezone(timedelta(hours=1))
    assert format_instant(datetime(2030, 1, 7, 10, 30, tzinfo=paris)) == "2030-01-07T09:30:00.000Z"
    assert format_instant(datetime(2030, 1, 7, 9, 30, 0, 250_000)) == "2030-01-07T09:30:00.250Z"


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("0 25 * * *", "hour 25 is out of range 0-23"),
        ("61 * * * *", "minute 61 is out of range 0-59"),
        ("0 0 32 * *", "day-of-month 32 is out of range 1-31"),
        ("0 0 * 13 *", "month 13 is out of range 1-12"),
        ("0 0 * * 1-9", "day-of-week 9 is out of range 0-7"),
    ],
)
def test_an_out_of_range_value_names_its_field_and_range(expr: str, problem: str) -> None:
    assert validate_cron(expr) == f"{problem} in {expr!r}"


@pytest.mark.parametrize("expr", ["*/45 * * * *", "0 0 * * 5#3", "0 0 15W * *"])
def test_steps_and_nth_weekdays_are_not_range_checked_as_values(expr: str) -> None:
    assert validate_cron(expr) is None
