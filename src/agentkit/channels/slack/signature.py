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
from agentkit.channels.local_request import ChannelMisconfigured, plain_local_request

log = logging.getLogger("agentkit.channels.slack")
PRINCIPAL = "slack"
SECRET_ENV = "SLACK_SIGNING_SECRET"


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
        stamp = lowered.get("x-slack-request-timestamp", "")
        # The verifier parses it with int(), which raises on `abc` or `1.5`: not signed.
        if not (stamp.isascii() and stamp.isdigit()):
            return False
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return False
        verifier = SignatureVerifier(secret, clock=self._clock)
        return verifier.is_valid_request(text, lowered)

    def __call__(self, request: ChannelRequest) -> str | None:
        if self.secret is not None:
            return PRINCIPAL if self.verify(request.body, dict(request.headers)) else None
        if plain_local_request(request):
            if not self._warned:
                log.warning(
                    "Slack channel has no signing secret: accepting unsigned loopback "
                    "requests only (set SLACK_SIGNING_SECRET before exposing it)"
                )
                self._warned = True
            return PRINCIPAL
        return None
