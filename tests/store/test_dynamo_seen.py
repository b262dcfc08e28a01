"""What the DynamoDB store keeps of the events it has read (`_dynamo_seen`)."""

from __future__ import annotations

from agentkit.events import Event, contiguous
from agentkit.store._dynamo_seen import SeenEvents

ALL = slice(0, None)


def events(session_id: str, start: int, count: int) -> list[Event]:
    return [
        Event(type="message.appended", index=i, session_id=session_id, at="t", data={})
        for i in range(start, start + count)
    ]


def test_kept_events_grow_from_index_zero_and_are_handed_out_again() -> None:
    seen = SeenEvents()
    first = events("s", 0, 3)
    assert seen.extend("s", 0, first, [10] * 3, ALL) == first
    more = events("s", 3, 2)

    kept = seen.extend("s", 3, more, [10] * 2, ALL)

    assert kept is not None and [e.index for e in kept] == [0, 1, 2, 3, 4]
    assert kept[0] is first[0]  # the same objects, for the folds carried per session
    assert seen.extend("s", 5, [], [], slice(1, 3)) == first[1:3]


def test_events_that_do_not_follow_on_are_not_kept() -> None:
    seen = SeenEvents()
    assert seen.extend("s", 4, events("s", 4, 2), [10, 10], ALL) is None  # not from 0
    assert seen.count("s") == 0
    seen.extend("s", 0, events("s", 0, 3), [10] * 3, ALL)

    # Another read kept 0..2 already; a read that began at 2 does not add its copies.
    assert seen.extend("s", 2, events("s", 2, 2), [10, 10], ALL) is None
    assert seen.count("s") == 3


def test_the_least_recently_read_session_goes_first() -> None:
    seen = SeenEvents(sessions=2)
    for name in ("a", "b"):
        seen.extend(name, 0, events(name, 0, 1), [10], ALL)
    seen.extend("a", 1, [], [], ALL)  # "a" read again: "b" is now the oldest

    seen.extend("c", 0, events("c", 0, 1), [10], ALL)

    assert (seen.count("a"), seen.count("b"), seen.count("c")) == (1, 0, 1)


def test_kept_bytes_are_bounded_and_a_huge_session_is_not_kept() -> None:
    seen = SeenEvents(max_bytes=1000)
    for name in "abcde":
        seen.extend(name, 0, events(name, 0, 2), [100, 100], ALL)  # 1,000 bytes in all
    assert seen.count("a") == 2

    seen.extend("f", 0, events("f", 0, 1), [100], ALL)

    assert [seen.count(name) for name in "abcdef"] == [0, 2, 2, 2, 2, 1]
    assert seen.extend("g", 0, events("g", 0, 1), [1001], ALL) is None  # over the bound
    assert seen.count("g") == 0


def test_a_run_stops_at_the_first_missing_index() -> None:
    run = [*events("s", 5, 2), *events("s", 8, 1)]
    assert [e.index for e in contiguous(run, 5)] == [5, 6]
    assert contiguous(run, 4) == []
