"""Telling a local tool's request apart from a browser's, for channels with no secret.

A channel without a signing secret admits unsigned requests from loopback only, for local
trials. Loopback alone is not enough: a web page open in the developer's browser can POST
to `127.0.0.1` without a preflight, and a DNS-rebinding page reaches it under its own name.
The `Host` check is the server's own (`server.local_origin`).
"""

from __future__ import annotations

from agentkit.authoring.channels import ChannelRequest
from agentkit.errors import HttpError
from agentkit.server.local_origin import loopback_host_header


class ChannelMisconfigured(HttpError):
    """A channel with no secret was asked to admit a request that is not a plain local
    one (503): it needs its secret to serve anyone else."""

    status = 503
    code = "channel_misconfigured"


def plain_local_request(request: ChannelRequest) -> bool:
    """A direct loopback request from a local tool (curl, a test), not from a browser page:
    browsers always name the `Origin` (and `Sec-Fetch-Site`) of such a POST, and a
    rebinding page's `Host` is its own name, not a loopback one. The body type is not
    checked, unlike the API's: Slack's interactions are form bodies, and the `Origin` rule
    already refuses every browser POST."""
    if not request.loopback:
        return False
    if request.header("Origin") is not None or request.header("Sec-Fetch-Site") is not None:
        return False
    return loopback_host_header(request.header("Host"))
