"""Strings built to match a tool schema's `pattern`: each one is checked with `re` itself."""

from __future__ import annotations

import re

import pytest

from agentkit.models._pattern import string_matching

MATCHABLE = [
    r"^\d{5}$",
    r"^[A-Z]{2}-\d+$",
    r"^[^abc]{3}$",  # a negated class: none of its letters
    r"^[^a-zA-Z0-9]+$",  # a negated class of ranges only
    r"^[^aA0\-_x]$",  # every preferred stand-in banned
    r"^\D\W\S\s\w$",  # the categories, each way round
    r"^[\d]+[\s][\w]$",  # categories inside a class
    r"^[b-d]x[^b]$",  # a range, then a negated literal
    r"^a.c$",
    r"^(?:cat|dog)s?$",  # alternation, optional suffix
    r"^(ab)+?c*$",  # a lazy repeat, a group, a repeat that may be empty
    r"^(?>ab)c$",  # an atomic group
    r"^x{2,}y{0,3}z{4}$",
    r"^[^a]$",
    r"\bword\b",
]


@pytest.mark.parametrize("pattern", MATCHABLE)
def test_the_string_matches_its_pattern(pattern: str) -> None:
    built = string_matching(pattern)
    assert built is not None, pattern
    assert re.search(pattern, built), (pattern, built)


def test_a_negated_class_that_bans_every_stand_in_falls_back() -> None:
    assert string_matching(r"^[^aA0\-_x]$") == "~"


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(?=\d)[a-z]$",  # a lookahead no string satisfies
        r"^(a)\1b$",  # a back-reference is not followed
        r"(unclosed",  # not a regex at all
    ],
)
def test_what_cannot_be_built_is_none_never_a_wrong_string(pattern: str) -> None:
    assert string_matching(pattern) is None
