"""Sealed records open only with their key, and any change to them is refused."""

from __future__ import annotations

import base64

import pytest

from agentkit.engine.sealed import SealBroken, open_sealed, seal, sealing_key

KEY = sealing_key("idempotent answer", "alice", "key-1")


def test_a_sealed_record_opens_with_its_key() -> None:
    text = '{"continuationToken": "http:secret", "note": "caf\\u00e9 \u00e9"}' * 3
    sealed = seal(KEY, text)
    assert "secret" not in sealed
    assert open_sealed(KEY, sealed) == text


def test_the_same_text_seals_differently_each_time() -> None:
    assert seal(KEY, "same") != seal(KEY, "same")


def test_another_key_does_not_open_it() -> None:
    sealed = seal(KEY, "token")
    with pytest.raises(SealBroken):
        open_sealed(sealing_key("idempotent answer", "bob", "key-1"), sealed)


@pytest.mark.parametrize("position", [0, 20, -1])
def test_a_changed_byte_is_refused(position: int) -> None:
    raw = bytearray(base64.b64decode(seal(KEY, "a live token")))
    raw[position] ^= 1
    with pytest.raises(SealBroken):
        open_sealed(KEY, base64.b64encode(bytes(raw)).decode())


@pytest.mark.parametrize("junk", ["", "not base64!", base64.b64encode(b"short").decode()])
def test_junk_is_refused(junk: str) -> None:
    with pytest.raises(SealBroken):
        open_sealed(KEY, junk)
