"""Slack request signing (v0): HMAC-SHA256 over `v0:<timestamp>:<raw body>`.

The check itself is `slack_sdk.signature.SignatureVerifier`: constant-time comparison and a
five-minute window on `X-Slack-Request-Timestamp` (so a captured request cannot be replayed
later). Its clock is injectable for tests.
"""

from __future__ import annotations

import logging
import os

from slack_sdk.signature import Clock, SignatureVerifier

from agentkit.authoring.channels import ChannelRequest
from agentkit.errors import HttpError

log = logging.getLogger("agentkit.channels.slack")
PRINCIPAL = "slack"
SECRET_ENV = "SLACK_SIGNING_SECRET"
LOCAL_HOSTS = frozenset({"localhost", "::1"})


class ChannelMisconfigured(HttpError):
    status = 503
    code = "channel_misconfigured"


def _plain_local(request: ChannelRequest) -> bool:
    """A local tool's request (curl, a test), not a browser's: a browser page can POST a
    form to loopback without a preflight, but it always names its `Origin` (and
    `Sec-Fetch-Site`), and a DNS-rebinding page's `Host` is its own name."""
    if request.header("Origin") is not None or request.header("Sec-Fetch-Site") is not None:
        return False
    host = (request.header("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
    return host in LOCAL_HOSTS or host.startswith("127.")


class SlackSignature:
    """The Slack channel's auth: a valid, fresh signature admits the request as `slack`.

    Without a signing secret only direct loopback requests are admitted (local trials), with
    a warning; a deployed host refuses to run the channel (`check_deployable`).
    """

    def __init__(self, signing_secret: str | None = None, clock: Clock | None = None) -> None:
        self._explicit = signing_secret or None
        self._clock = clock or Clock()
        self._warned = False

    @property
    def secret(self) -> str | None:
        """The given secret, else `SLACK_SIGNING_SECRET` as it is now (a deployed host
        fills it from its secret store before serving)."""
        return self._explicit or os.environ.get(SECRET_ENV) or None

    def check_deployable(self) -> None:
        if self.secret is None:
            raise ChannelMisconfigured(
                "the Slack channel has no signing secret; set SLACK_SIGNING_SECRET"
            )

    def verify(self, body: bytes, headers: dict[str, str]) -> bool:
        secret = self.secret
        if secret is None:
            return False
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return False
        verifier = SignatureVerifier(secret, clock=self._clock)
        return verifier.is_valid_request(text, lowered)

    def __call__(self, request: ChannelRequest) -> str | None:
        if self.secret is not None:
            return PRINCIPAL if self.verify(request.body, dict(request.headers)) else None
        if request.loopback and _plain_local(request):
            if not self._warned:
                log.warning(
                    "Slack channel has no signing secret: accepting unsigned loopback "
                    "requests only (set SLACK_SIGNING_SECRET before exposing it)"
                )
                self._warned = True
            return PRINCIPAL
        return None
