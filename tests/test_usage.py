"""Adding usages: a sum of counts, whichever side is zero."""

from __future__ import annotations

from agentkit.events import Usage

SOME = Usage(input_tokens=3, output_tokens=4, cache_read_tokens=5, cache_write_tokens=6)


def test_adding_zero_on_either_side_gives_the_other() -> None:
    assert Usage() + SOME == SOME
    assert SOME + Usage() == SOME
    assert Usage() + Usage() == Usage()


def test_adding_two_usages_adds_every_count() -> None:
    total = SOME + Usage(input_tokens=1, cache_write_tokens=2)
    assert total == Usage(
        input_tokens=4, output_tokens=4, cache_read_tokens=5, cache_write_tokens=8
    )
    assert sum([SOME, SOME], Usage()) == SOME + SOME
