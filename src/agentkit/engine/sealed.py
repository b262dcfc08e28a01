"""Sealing a small secret record with a key the store never sees.

An idempotent write's recorded answer carries a live continuation token. The store keeps
only a token's hash everywhere else, so a leaked store leaks no live token; the recorded
answer keeps that promise by being sealed with a key derived from the caller's
`Idempotency-Key`, which the store holds only as a hash. Only a caller that presents the key
again can open it.

The seal is HMAC-SHA256 both ways: a keystream of HMAC(key, nonce || counter) blocks
XORed with the text (encryption), then HMAC(key, "tag" || nonce || ciphertext) over the
result (integrity). Both come from the standard library's `hmac` and `hashlib`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["SealBroken", "open_sealed", "seal", "sealing_key"]

_NONCE = 16
_TAG = 32


class SealBroken(ValueError):
    """The sealed text was altered, or the key is not the one it was sealed with."""


def sealing_key(*parts: str) -> bytes:
    """A 32-byte key derived from `parts` (domain-separated, order matters)."""
    joined = "\0".join(("agentkit sealed record v1", *parts))
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).digest()


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = []
    for counter in range((length + 31) // 32):
        blocks.append(hmac.digest(key, nonce + counter.to_bytes(8, "big"), "sha256"))
    return b"".join(blocks)[:length]


def seal(key: bytes, text: str) -> str:
    """`text`, encrypted and authenticated under `key`, as ASCII."""
    nonce = secrets.token_bytes(_NONCE)
    plain = text.encode("utf-8", "surrogatepass")
    cipher = bytes(a ^ b for a, b in zip(plain, _keystream(key, nonce, len(plain)), strict=True))
    tag = hmac.digest(key, b"tag" + nonce + cipher, "sha256")
    return base64.b64encode(nonce + cipher + tag).decode("ascii")


def open_sealed(key: bytes, sealed: str) -> str:
    """The text `seal(key, text)` sealed; `SealBroken` for any other input."""
    try:
        raw = base64.b64decode(sealed.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise SealBroken("not a sealed record") from None
    if len(raw) < _NONCE + _TAG:
        raise SealBroken("not a sealed record")
    nonce, cipher, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
    if not hmac.compare_digest(tag, hmac.digest(key, b"tag" + nonce + cipher, "sha256")):
        raise SealBroken("the sealed record does not open with this key")
    plain = bytes(a ^ b for a, b in zip(cipher, _keystream(key, nonce, len(cipher)), strict=True))
    return plain.decode("utf-8", "surrogatepass")
