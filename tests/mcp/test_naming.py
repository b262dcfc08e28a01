"""Exposed MCP tool names: provider-safe, at most 64 characters, unique, deterministic."""

from __future__ import annotations

import re

from agentkit.mcp.naming import MAX_LEN, assign_names, exposed_name

SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names_are_kept() -> None:
    assert exposed_name("linear", "create_issue") == "mcp__linear__create_issue"


def test_other_characters_become_underscores() -> None:
    assert exposed_name("docs", "search.pages/v2 beta") == "mcp__docs__search_pages_v2_beta"


def test_long_names_are_cut_with_a_hash_suffix() -> None:
    name = exposed_name("warehouse", "x" * 100)
    assert len(name) == MAX_LEN and SAFE.match(name)
    assert name.startswith("mcp__warehouse__xxx") and re.search(r"_[0-9a-f]{8}$", name)
    assert exposed_name("warehouse", "x" * 100) == name  # deterministic
    assert exposed_name("warehouse", "x" * 101) != name


def test_collisions_get_a_suffix_and_order_does_not_matter() -> None:
    pairs = [("docs", "a.b"), ("docs", "a_b"), ("docs", "a b")]
    names = assign_names(pairs)
    assert len(set(names.values())) == 3 and all(SAFE.match(n) for n in names.values())
    # the first in (connection, raw name) order keeps the plain name
    assert names[("docs", "a b")] == "mcp__docs__a_b"
    assert names[("docs", "a.b")].startswith("mcp__docs__a_b_")
    assert assign_names(reversed(pairs)) == names
    long_pairs = [("c", "y" * 80 + "1"), ("c", "y" * 80 + "2")]
    long_names = assign_names(long_pairs)
    assert len(set(long_names.values())) == 2
    assert all(len(n) <= MAX_LEN for n in long_names.values())
