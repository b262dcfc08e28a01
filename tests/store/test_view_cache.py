"""The file store's cache of parsed sessions: least recently used views are evicted past
its bound, pinned sessions never are (and do not count toward it), and pins are counted."""

from __future__ import annotations

from pathlib import Path

from agentkit.store._eventlog import EventLog
from agentkit.store._viewcache import ViewCache


def maker(tmp_path: Path, sid: str) -> EventLog:
    return EventLog(tmp_path / f"{sid}.ndjson", sid, tmp_path / f"{sid}.lock")


def fill(cache: ViewCache, tmp_path: Path, names: list[str]) -> list[str]:
    """Look each name up (making its view); the names of the views evicted meanwhile."""
    evicted: list[str] = []
    for name in names:
        _, dropped = cache.get(name, lambda name=name: maker(tmp_path, name))
        evicted.extend(log.session_id for log in dropped)
    return evicted


def test_the_least_recently_used_view_goes_first(tmp_path: Path) -> None:
    cache = ViewCache(3, 1 << 30)
    assert fill(cache, tmp_path, ["a", "b", "c"]) == []
    assert cache.peek("a") is not None  # a is now the most recently used
    assert fill(cache, tmp_path, ["d"]) == ["b"]
    assert "a" in cache and "b" not in cache and len(cache) == 3


def test_a_pinned_view_is_never_evicted_and_counts_outside_the_bound(tmp_path: Path) -> None:
    cache = ViewCache(3, 1 << 30)
    fill(cache, tmp_path, ["followed"])
    cache.pin("followed")
    others = [f"s{i}" for i in range(300)]
    evicted = fill(cache, tmp_path, others)
    assert "followed" in cache and "followed" not in evicted
    assert len(cache) == 1 + 3  # the pinned view, and the bound's worth of others
    assert evicted == others[:-3]  # oldest first, every one of them but the last three


def test_pins_are_counted_and_the_last_unpin_makes_it_evictable(tmp_path: Path) -> None:
    cache = ViewCache(2, 1 << 30)
    cache.pin("x")  # before its view exists: the view is made pinned
    cache.pin("x")
    fill(cache, tmp_path, ["x", "a", "b", "c"])
    assert cache.unpin("x") == [] and cache.pinned("x")  # one pin is left
    assert "x" in cache
    evicted = [log.session_id for log in cache.unpin("x")]
    assert not cache.pinned("x")
    # Back among the others as the most recently used: the oldest other goes instead.
    assert evicted == ["b"] and "x" in cache
    assert fill(cache, tmp_path, ["d", "e"]) == ["c", "x"]


def test_forgetting_a_view_keeps_its_pins(tmp_path: Path) -> None:
    cache = ViewCache(1, 1 << 30)
    cache.pin("x")
    fill(cache, tmp_path, ["x"])
    assert cache.pop("x") is not None and "x" not in cache  # deleted, say
    assert fill(cache, tmp_path, ["x", "a", "b"]) == ["a"]  # made again: still pinned
    assert "x" in cache
    assert [log.session_id for log in cache.unpin("x")] == ["b"]
    assert fill(cache, tmp_path, ["c"]) == ["x"]
