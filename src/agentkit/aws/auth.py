"""Auth for the deployed API: never open by default.

`localDevStrict` means nothing behind API Gateway (every request arrives through a proxy),
so the deployed chain is one of:

- `bearer` (default): `Authorization: Bearer <token>` checked in constant time against a
  token kept in Secrets Manager (or an SSM SecureString), read through Powertools
  parameters and cached for `max_age` seconds, so a rotated secret takes effect within
  minutes and a warm function does not call Secrets Manager per request. The secret holds
  the token, or JSON `{"tokens": [...]}` / `{"token": "..."}` (several tokens ease
  rotation). A secret that cannot be read keeps the last tokens read from it and is tried
  again within seconds; one that was never read refuses every request (401), never admits.
- `iam` / `jwt`: API Gateway has already verified the caller (SigV4 or a JWT); the principal
  is read from the request context (`iam:<caller ARN>`, `jwt:<issuer>#<subject>`). A request
  without that context is refused. For an assumed role the principal is the role, never the
  caller-chosen session name (`iam_identity`).

Nothing admits a request anonymously; the local loop (`sam local`) uses a bearer token given
in the environment (`AGENTKIT_BEARER_TOKEN`), which stays empty when deployed.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from agentkit.aws.settings import AwsSettings
from agentkit.errors import Unauthorized
from agentkit.server.auth import AuthChain, bearer_principal_id, bearer_token
from agentkit.sessions import Principal

log = logging.getLogger("agentkit.aws.auth")

TokenSource = Callable[[], list[str]]
DEFAULT_MAX_AGE = 300.0
# After a failed read of the secret, how soon to try again.
DEFAULT_RETRY_AFTER = 5.0


def parse_tokens(raw: str | None) -> list[str]:
    """The tokens held in a secret's value (plain text or JSON)."""
    if raw is None or not raw.strip():
        return []
    text = raw.strip()
    if text.startswith(("{", "[")):
        try:
            value = json.loads(text)
        except ValueError:
            return []
        return _json_tokens(value)
    return [text]


def _json_tokens(value: object) -> list[str]:
    # Only the documented shapes count: a malformed secret must admit no one, never
    # (say) every character of a string that was meant to be a list.
    if not isinstance(value, dict):
        log.warning("bearer-token secret is JSON but not an object; no token accepted")
        return []
    tokens = value.get("tokens")
    if tokens is not None:
        if not isinstance(tokens, list):
            log.warning("bearer-token secret: `tokens` must be a list; no token accepted")
            return []
        return [t for t in tokens if isinstance(t, str) and t]
    token = value.get("token")
    return [token] if isinstance(token, str) and token else []


def secret_token_source(settings: AwsSettings, *, max_age: float = DEFAULT_MAX_AGE) -> TokenSource:
    """Read the bearer token(s) through Powertools parameters (cached `max_age` seconds)."""
    name = settings.bearer_token_name

    def read() -> list[str]:
        from aws_lambda_powertools.utilities import parameters

        from agentkit.aws.clients import client

        if settings.bearer_token_store == "ssm":
            ssm = parameters.SSMProvider(boto3_client=client("ssm", settings))
            value = ssm.get(f"/{name.lstrip('/')}", decrypt=True, max_age=int(max_age))
        else:
            secrets = parameters.SecretsProvider(boto3_client=client("secretsmanager", settings))
            value = secrets.get(name, max_age=int(max_age))
        return parse_tokens(value if isinstance(value, str) else None)

    return read


class CachedTokens:
    """Tokens from a source, re-read after `max_age`.

    A failed read keeps the last good tokens (a throttled or briefly unreachable Secrets
    Manager must not lock every caller out) and is retried after `retry_after` seconds;
    only while no read has ever succeeded does it admit nobody.
    """

    def __init__(
        self,
        source: TokenSource,
        *,
        max_age: float = DEFAULT_MAX_AGE,
        retry_after: float = DEFAULT_RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._max_age = max_age
        self._retry_after = retry_after
        self._clock = clock
        self._tokens: list[str] = []
        self._next_read: float | None = None  # None: never read

    def tokens(self) -> list[str]:
        now = self._clock()
        if self._next_read is None or now >= self._next_read:
            try:
                self._tokens = [t for t in self._source() if t]
            except Exception:  # a broken secret must not crash requests
                kept = "keeping the last good tokens" if self._tokens else "admitting nobody"
                log.exception("cannot read the bearer token secret (%s)", kept)
                self._next_read = now + self._retry_after
            else:
                self._next_read = now + self._max_age
        return self._tokens


class SecretBearerAuth:
    """`Authorization: Bearer` against tokens from a secret (see module docs)."""

    name = "bearerAuth"

    def __init__(self, tokens: CachedTokens) -> None:
        self._tokens = tokens

    def admit(self, request: Request) -> Principal | None:
        presented = bearer_token(request)
        if presented is None:
            return None
        raw = presented.encode("utf-8")
        match: str | None = None
        for token in self._tokens.tokens():
            if hmac.compare_digest(raw, token.encode("utf-8")):
                match = token
        if match is None:
            raise Unauthorized("invalid bearer token", code="unauthorized")
        return Principal(bearer_principal_id(match))


def iam_identity(arn: str) -> str:
    """The part of a caller's ARN the caller cannot choose. An assumed role's ARN ends in
    the RoleSessionName, which whoever assumes the role picks freely, so two people allowed
    to assume one role could name themselves into each other's sessions: the principal is
    the role (`arn:aws:sts::<account>:assumed-role/<role>`), shared by everyone who assumes
    it. Give each person their own role (or IAM user) to keep their sessions apart."""
    prefix, sep, rest = arn.partition(":assumed-role/")
    if not sep:
        return arn
    role = rest.split("/", 1)[0]
    return f"{prefix}{sep}{role}"


def _authorizer(request: Request) -> dict[str, Any]:
    event = request.scope.get("aws.event") or {}
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    return authorizer if isinstance(authorizer, dict) else {}


class GatewayPrincipal:
    """The principal API Gateway's IAM or JWT authorizer established for the request."""

    def __init__(self, mode: str) -> None:
        if mode not in ("iam", "jwt"):
            raise ValueError(f"GatewayPrincipal takes iam or jwt, not {mode!r}")
        self.mode = mode
        self.name = f"{mode}Authorizer"

    def admit(self, request: Request) -> Principal | None:
        authorizer = _authorizer(request)
        if self.mode == "iam":
            iam = authorizer.get("iam") or {}
            arn = iam.get("userArn")
            return Principal(f"iam:{iam_identity(arn)}") if isinstance(arn, str) and arn else None
        claims = (authorizer.get("jwt") or {}).get("claims") or {}
        subject = claims.get("sub")
        if not subject:
            return None
        return Principal(f"jwt:{claims.get('iss', '')}#{subject}")


def auth_chain(settings: AwsSettings, *, token_source: TokenSource | None = None) -> AuthChain:
    """The deployed auth chain for `settings.auth_mode` (see module docs)."""
    if settings.auth_mode in ("iam", "jwt"):
        return AuthChain([GatewayPrincipal(settings.auth_mode)])
    if token_source is None:
        if settings.bearer_token:
            fixed = [settings.bearer_token]
            token_source = lambda: fixed  # noqa: E731
        else:
            token_source = secret_token_source(settings)
    return AuthChain([SecretBearerAuth(CachedTokens(token_source))])
