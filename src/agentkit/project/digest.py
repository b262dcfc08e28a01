"""The digest of a manifest: which build of the agent a session began on.

`session.started` records it, so a recorded session can be matched to the bundle that
produced it (a deploy check, a replay). It is the `sha256:` of the manifest's stable JSON
(`Manifest.to_json`, sorted keys), so a byte-identical bundle always has the same digest.
"""

from __future__ import annotations

import hashlib

from agentkit.project.manifest import Manifest

# The last manifest digested and its digest: a runtime starts every session on the same
# manifest object until a reload, and dumping a large manifest once per session would be
# the largest part of accepting a message.
_LAST: tuple[Manifest, str] | None = None


def manifest_digest(manifest: Manifest) -> str:
    """`sha256:<hex>` of `manifest`'s stable JSON."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is manifest:
        return last[1]
    digest = "sha256:" + hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()
    _LAST = (manifest, digest)
    return digest


__all__ = ["manifest_digest"]
