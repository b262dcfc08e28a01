"""The blocking client is generated from the asyncio one: regenerating it changes nothing,
and the generator refuses a substitution that no longer matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.client import _unasync


def test_the_sync_client_is_what_the_generator_writes() -> None:
    assert _unasync.main(["--check"]) == 0, "_sync.py is out of date: run `make unasync`"


def test_the_generated_client_has_no_async_left() -> None:
    text = _unasync.TARGET.read_text(encoding="utf-8")
    assert text.startswith(_unasync.HEADER)
    for word in ("async ", "await ", "asyncio.", "AsyncClient(", "aiter_", "aclosing"):
        assert word not in text, word


def test_a_substitution_that_matches_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="matched nothing"):
        _unasync.unasync("x = 1\n")


def test_a_drifted_sync_client_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drifted = tmp_path / "_sync.py"
    drifted.write_text(_unasync.TARGET.read_text(encoding="utf-8") + "x = 1\n")
    monkeypatch.setattr(_unasync, "TARGET", drifted)
    assert _unasync.main(["--check"]) == 1
    assert "-x = 1" in capsys.readouterr().err  # the line regenerating would drop
