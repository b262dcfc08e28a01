"""Standard 5-field UTC cron against the EventBridge Scheduler form it deploys as."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentkit.cron.eventbridge import (
    UntranslatableCron,
    at_expression,
    cron_translation_error,
    rate_expression,
    to_eventbridge_cron,
)

TRANSLATIONS = [
    # every minute / hour / day
    ("* * * * *", "cron(* * * * ? *)"),
    ("0 * * * *", "cron(0 * * * ? *)"),
    ("0 0 * * *", "cron(0 0 * * ? *)"),
    ("30 9 * * *", "cron(30 9 * * ? *)"),
    # steps
    ("*/15 * * * *", "cron(0/15 * * * ? *)"),
    ("*/5 * * * *", "cron(0/5 * * * ? *)"),
    ("5/10 * * * *", "cron(5/10 * * * ? *)"),
    ("0 */2 * * *", "cron(0 0/2 * * ? *)"),
    ("0 0 */2 * *", "cron(0 0 1/2 * ? *)"),
    ("0 0 1 */3 *", "cron(0 0 1 1/3 ? *)"),
    ("0-30/10 * * * *", "cron(0,10,20,30 * * * ? *)"),
    ("*/1 * * * *", "cron(* * * * ? *)"),
    # ranges and lists
    ("0 9-17 * * *", "cron(0 9-17 * * ? *)"),
    ("0,30 * * * *", "cron(0,30 * * * ? *)"),
    ("0 8,12,18 * * *", "cron(0 8,12,18 * * ? *)"),
    ("15 1-3,20-22 * * *", "cron(15 1-3,20-22 * * ? *)"),
    ("0 0 1,15 * *", "cron(0 0 1,15 * ? *)"),
    ("0 0 28-31 * *", "cron(0 0 28-31 * ? *)"),
    # day-of-week numbering: cron Sun=0 (or 7), EventBridge Sun=1
    ("0 9 * * 1-5", "cron(0 9 ? * 2-6 *)"),
    ("0 9 * * 0", "cron(0 9 ? * 1 *)"),
    ("0 9 * * 7", "cron(0 9 ? * 1 *)"),
    ("0 9 * * 6", "cron(0 9 ? * 7 *)"),
    ("0 9 * * 0,6", "cron(0 9 ? * 1,7 *)"),
    ("0 9 * * 6,7", "cron(0 9 ? * 1,7 *)"),
    ("0 9 * * 5-7", "cron(0 9 ? * 1,6-7 *)"),
    ("0 9 * * */2", "cron(0 9 ? * 1,3,5,7 *)"),
    ("0 9 * * 1-5/2", "cron(0 9 ? * 2,4,6 *)"),
    ("0 9 * * 0-6", "cron(0 9 * * ? *)"),
    # names
    ("0 9 * * MON-FRI", "cron(0 9 ? * 2-6 *)"),
    ("0 9 * * sun", "cron(0 9 ? * 1 *)"),
    ("0 9 * * MON,WED,FRI", "cron(0 9 ? * 2,4,6 *)"),
    ("0 0 1 JAN *", "cron(0 0 1 1 ? *)"),
    ("0 0 1 jan-mar *", "cron(0 0 1 1-3 ? *)"),
    ("0 0 * JUN,DEC SAT", "cron(0 0 ? 6,12 7 *)"),
    # day-of-month with the day-of-week unrestricted, and the reverse
    ("0 12 15 * *", "cron(0 12 15 * ? *)"),
    ("0 12 * * 3", "cron(0 12 ? * 4 *)"),
    ("0 12 */1 * *", "cron(0 12 * * ? *)"),
    ("0 0 1-31 * 0-7", "cron(0 0 * * ? *)"),
    # whitespace and macros
    ("  0   9 *  * 1 ", "cron(0 9 ? * 2 *)"),
    ("@daily", "cron(0 0 * * ? *)"),
    ("@hourly", "cron(0 * * * ? *)"),
    ("@weekly", "cron(0 0 ? * 1 *)"),
    ("@monthly", "cron(0 0 1 * ? *)"),
    ("@yearly", "cron(0 0 1 1 ? *)"),
]

UNTRANSLATABLE = [
    # both day fields restricted: standard cron ORs them
    ("0 0 1 * 1", "restricts both day-of-month and day-of-week"),
    ("0 0 1,15 * MON-FRI", "restricts both day-of-month and day-of-week"),
    ("0 0 */2 * 1", "restricts both day-of-month and day-of-week"),
    ("0 0 1 * 0-6", "lists every day-of-week explicitly"),
    ("0 0 1-31 * 1", "lists every day-of-month explicitly"),
    ("0 12 15 * */1", "lists every day-of-week explicitly"),
    ("0 12 */1 * 3", "lists every day-of-month explicitly"),
    # not 5-field cron
    ("0 0 * * * *", "has 6 fields"),
    ("0 0 * *", "has 4 fields"),
    ("", "empty"),
    ("@reboot", "no EventBridge equivalent"),
    # out of range, malformed, or non-standard extensions
    ("60 * * * *", "minute value 60 is outside 0-59"),
    ("0 24 * * *", "hour value 24 is outside 0-23"),
    ("0 0 0 * *", "day-of-month value 0 is outside 1-31"),
    ("0 0 1 13 *", "month value 13 is outside 1-12"),
    ("0 0 * * 8", "day-of-week value 8 is outside 0-7"),
    ("*/0 * * * *", "bad step"),
    ("0 17-9 * * *", "runs backwards"),
    ("0 0 L * *", "not standard cron"),
    ("0 0 ? * 1", "not standard cron"),
    ("0 0 * * FUNDAY", "not a valid day-of-week"),
    ("0,,5 * * * *", "empty list item"),
]


@pytest.mark.parametrize(("cron", "expected"), TRANSLATIONS)
def test_translates_standard_cron(cron: str, expected: str) -> None:
    assert to_eventbridge_cron(cron) == expected
    assert cron_translation_error(cron) is None


@pytest.mark.parametrize(("cron", "reason"), UNTRANSLATABLE)
def test_untranslatable_cron_is_an_error_message(cron: str, reason: str) -> None:
    with pytest.raises(UntranslatableCron, match=reason):
        to_eventbridge_cron(cron)
    message = cron_translation_error(cron)
    assert message is not None and reason in message


def test_table_is_large_enough() -> None:
    assert len(TRANSLATIONS) >= 30
    assert len(UNTRANSLATABLE) >= 10


def test_exactly_one_day_field_is_a_question_mark() -> None:
    for cron, _ in TRANSLATIONS:
        fields = to_eventbridge_cron(cron).removeprefix("cron(").removesuffix(")").split(" ")
        assert len(fields) == 6
        assert [fields[2], fields[4]].count("?") == 1, cron


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (60, "rate(1 minute)"),
        (30 * 60, "rate(30 minutes)"),
        (90, "rate(2 minutes)"),
        (3600, "rate(1 hour)"),
        (7200, "rate(2 hours)"),
        (86400, "rate(1 day)"),
        (5, "rate(1 minute)"),
    ],
)
def test_rate_expression(seconds: float, expected: str) -> None:
    assert rate_expression(seconds) == expected


def test_rate_rejects_non_positive_interval() -> None:
    with pytest.raises(ValueError, match="positive"):
        rate_expression(0)


def test_at_expression_is_utc() -> None:
    when = datetime(2026, 3, 1, 10, 30, 5, tzinfo=timezone(timedelta(hours=2)))
    assert at_expression(when) == "at(2026-03-01T08:30:05)"
    assert at_expression(datetime(2026, 3, 1, tzinfo=UTC)) == "at(2026-03-01T00:00:00)"


def test_at_expression_rejects_naive_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        at_expression(datetime(2026, 3, 1))


def _eb_values(field: str, low: int, high: int) -> set[int]:
    if field in ("*", "?"):
        return set(range(low, high + 1))
    values: set[int] = set()
    for item in field.split(","):
        if "/" in item:
            start, step = item.split("/")
            values |= set(range(int(start), high + 1, int(step)))
        elif "-" in item:
            a, b = item.split("-")
            values |= set(range(int(a), int(b) + 1))
        else:
            values.add(int(item))
    return values


@pytest.mark.parametrize(("cron", "expected"), TRANSLATIONS)
def test_translation_fires_when_croniter_does(cron: str, expected: str) -> None:
    """Read the EventBridge form back and compare it, day by day over a year, with what
    croniter (the local scheduler) makes of the standard expression."""
    from croniter import croniter

    fields = expected.removeprefix("cron(").removesuffix(")").split(" ")
    minutes = _eb_values(fields[0], 0, 59)
    hours = _eb_values(fields[1], 0, 23)
    doms = _eb_values(fields[2], 1, 31)
    months = _eb_values(fields[3], 1, 12)
    dows = {d - 1 for d in _eb_values(fields[4], 1, 7)}  # back to Sun=0
    start = datetime(2027, 1, 1, tzinfo=UTC)
    expected_fires = []
    day = start
    while day < start + timedelta(days=400) and len(expected_fires) < 60:
        weekday = (day.weekday() + 1) % 7
        if day.month in months and day.day in doms and weekday in dows:
            for h in sorted(hours):
                for m in sorted(minutes):
                    expected_fires.append(day.replace(hour=h, minute=m))
        day += timedelta(days=1)
    expected_fires = expected_fires[:60]
    source = " ".join(cron.split()) if not cron.strip().startswith("@") else cron.strip()
    it = croniter(source, start - timedelta(minutes=1))
    actual = [it.get_next(datetime) for _ in range(len(expected_fires))]
    assert actual == expected_fires
