"""`X-Hub-Signature-256`: GitHub signs each delivery's raw body with HMAC-SHA256."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os

from agentkit.authoring.channels import ChannelRequest
from agentkit.channels.local_request import ChannelMisconfigured, plain_local_request

log = logging.getLogger("agentkit.channels.github")
SIGNATURE_HEADER = "X-Hub-Signature-256"
PRINCIPAL = "github"


def sign(secret: str, body: bytes) -> str:
    """The header value GitHub sends for `body` (`sha256=<hex>`)."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True when `header` is the signature of `body` (constant-time comparison)."""
    if not header or not header.startswith("sha256="):
        return False
    return hmac.compare_digest(
        sign(secret, body).encode("ascii"), header.encode("utf-8", "replace")
    )


class GitHubSignature:
    """The GitHub channel's auth: a valid signature admits the delivery as `github`.

    Without a secret, only direct loopback deliveries are admitted (local trials), with a
    warning; a deployed host refuses to run the channel at all (`check_deployable`).
    """

    def __init__(self, secret: str | None = None) -> None:
        self._explicit = secret or None
        self._warned = False

    @property
    def secret(self) -> str | None:
        """The given secret, else `GITHUB_WEBHOOK_SECRET` as it is now (a deployed host
        fills it from its secret store just before serving requests)."""
        return self._explicit or os.environ.get("GITHUB_WEBHOOK_SECRET") or None

    def check_deployable(self) -> None:
        if self.secret is None:
            raise ChannelMisconfigured(
                "the GitHub channel has no webhook secret; set GITHUB_WEBHOOK_SECRET"
            )

    def __call__(self, request: ChannelRequest) -> str | None:
        secret = self.secret
        if secret is not None:
            ok = verify(secret, request.body, request.header(SIGNATURE_HEADER))
            return PRINCIPAL if ok else None
        if plain_local_request(request):  # loopback, and not a browser page
            if not self._warned:
                log.warning(
                    "GitHub channel has no webhook secret: accepting unsigned loopback "
                    "deliveries only (set GITHUB_WEBHOOK_SECRET before exposing it)"
                )
                self._warned = True
            return PRINCIPAL
        return None
