"""The HTTP auth chain: an ordered list of policies; the first that admits a request
names its principal, and a request no policy admits gets `401`.

- `local_dev_strict()` (the default) admits direct loopback calls only. A request carrying
  any proxy-forwarding header is refused, because behind a tunnel or reverse proxy every
  client looks like loopback; so is one a browser sends on another site's behalf (a
  non-loopback `Host` or `Origin`, or a non-JSON body: see `server.local_origin`).
- `bearer_auth(tokens)` admits `Authorization: Bearer <token>` for any configured token,
  compared in constant time. Each token is its own principal, `bearer:<digest prefix>`, so
  the id is stable across restarts and never reveals the token.
- `allow_all()` admits everyone as `anonymous` (demos on trusted networks).

Who is "the local developer" (server logs, dev routes, every session, the host-level GitHub
fan-out): a plain TCP tunnel or forwarder (`ssh -R`, `socat`, a port-forward) adds no
header, so its outsiders look exactly like a direct loopback caller. Loopback therefore
confers nothing once `--bearer-token`, `--tokens-file` or `--allow-anonymous` is given:
under those, the local developer exists only with `--dev` (a direct loopback caller that
presents no token), and an `--admin-token` holder is an admin from anywhere. Only the
default loopback-only policy, which admits nobody else, treats its caller as the local
developer without `--dev`.

A presented but wrong bearer token is always refused, even when `allow_all` follows it in
the chain: a typo should not silently turn a caller into `anonymous`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from starlette.requests import Request

from agentkit.errors import BadRequest, Unauthorized
from agentkit.server.local_origin import check_local_request, is_local_request
from agentkit.sessions import Principal

FORWARDING_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-real-ip",
    "x-client-ip",
    "x-original-forwarded-for",
    "cf-connecting-ip",
    "true-client-ip",
    "via",
    "x-forwarded-server",
    "x-cluster-client-ip",
    "fastly-client-ip",
    "x-proxyuser-ip",
    "forwarded-for",
    "x-forwarded",
)
LOCAL_PRINCIPAL = "local"
ANONYMOUS_PRINCIPAL = "anonymous"


def has_forwarding_headers(request: Request) -> bool:
    return any(h in request.headers for h in FORWARDING_HEADERS)


def is_loopback_client(request: Request) -> bool:
    client = request.client
    if client is None:
        return False
    try:
        return ipaddress.ip_address(client.host).is_loopback
    except ValueError:
        return False


def is_direct_loopback(request: Request) -> bool:
    """A loopback peer that did not come through a proxy."""
    return is_loopback_client(request) and not has_forwarding_headers(request)


def bearer_principal_id(token: str) -> str:
    """The principal id of a bearer token: a digest prefix, never the token itself."""
    return "bearer:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


class AuthPolicy(Protocol):
    @property
    def name(self) -> str: ...

    def admit(self, request: Request) -> Principal | None:
        """The principal this policy admits the request as, or None to pass."""
        ...


@dataclass(frozen=True, slots=True)
class LocalDevStrict:
    """Direct loopback callers whose `Host`, `Origin` and body type say "local developer".

    `hosts` are extra names the `Host` header may carry (the address `serve` was bound to).
    `admin`: the caller sees every session (`serve --dev`).
    """

    name: str = "localDevStrict"
    hosts: frozenset[str] = frozenset()
    admin: bool = False

    def admit(self, request: Request) -> Principal | None:
        if not is_direct_loopback(request):
            return None
        check_local_request(request, self.hosts)  # 421 / 403 / 415, never a silent pass
        return Principal(LOCAL_PRINCIPAL, admin=self.admin)


@dataclass(frozen=True, slots=True)
class LocalDeveloper:
    """`--dev` beside token or anonymous auth: a direct loopback caller that presents no
    token and passes the local-request checks is the local developer (an admin). Anyone
    else passes on to the next policy, so a token always names its own principal."""

    name: str = "localDeveloper"
    hosts: frozenset[str] = frozenset()

    def admit(self, request: Request) -> Principal | None:
        if request.headers.get("authorization") is not None or not is_direct_loopback(request):
            return None
        if not is_local_request(request, self.hosts):
            return None
        return Principal(LOCAL_PRINCIPAL, admin=True)


class BearerAuth:
    """Admit any of a set of tokens; each token is a distinct principal. Holders of an
    `admin_tokens` token are admins: every session, the server logs, the dev routes."""

    name = "bearerAuth"

    def __init__(self, tokens: Iterable[str], admin_tokens: Iterable[str] = ()) -> None:
        admins = [t.encode("utf-8") for t in admin_tokens if t]
        self._admins = frozenset(admins)
        self._tokens = [t.encode("utf-8") for t in tokens if t] + admins
        if not self._tokens:
            raise ValueError("bearer auth needs at least one non-empty token")

    def admit(self, request: Request) -> Principal | None:
        presented = bearer_token(request)
        if presented is None:
            return None
        raw = presented.encode("utf-8")
        match: bytes | None = None
        # Compare against every token so timing says nothing about which (or whether) matched.
        for token in self._tokens:
            if hmac.compare_digest(raw, token):
                match = token
        if match is None:
            raise Unauthorized("invalid bearer token", code="unauthorized")
        return Principal(bearer_principal_id(match.decode("utf-8")), admin=match in self._admins)


@dataclass(frozen=True, slots=True)
class AllowAll:
    name: str = "allowAll"

    def admit(self, request: Request) -> Principal | None:
        return Principal(ANONYMOUS_PRINCIPAL)


def local_dev_strict(hosts: Iterable[str] = (), *, admin: bool = False) -> LocalDevStrict:
    return LocalDevStrict(hosts=frozenset(hosts), admin=admin)


def bearer_auth(tokens: Iterable[str], admin_tokens: Iterable[str] = ()) -> BearerAuth:
    return BearerAuth(tokens, admin_tokens)


def allow_all() -> AllowAll:
    return AllowAll()


def bearer_token(request: Request) -> str | None:
    """The bearer token a request presents, or None. More than one `Authorization` header
    is refused (400): a proxy in front may judge a different one than this server does,
    so which credentials the request carries would depend on who reads it."""
    headers = request.headers.getlist("authorization")
    if len(headers) > 1:
        raise BadRequest("more than one Authorization header", code="bad_request")
    header = headers[0] if headers else None
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


class AuthChain:
    """Ordered policies. `dev_admin` (`serve --dev`) makes the default policy's local
    developer an admin; `local_hosts` are names besides loopback ones a local developer's
    `Host` header may carry."""

    def __init__(
        self,
        policies: Sequence[AuthPolicy],
        *,
        dev_admin: bool = False,
        local_hosts: Iterable[str] = (),
    ) -> None:
        if not policies:
            raise ValueError("an auth chain needs at least one policy")
        if dev_admin:
            policies = [
                replace(p, admin=True) if isinstance(p, LocalDevStrict) else p for p in policies
            ]
        self.policies = list(policies)
        self.dev_admin = dev_admin
        self.local_hosts = frozenset(local_hosts)
        # Only a chain that admits nobody but direct loopback callers may treat them as the
        # local developer without `--dev`.
        self.loopback_only = all(isinstance(p, LocalDevStrict) for p in self.policies)

    @classmethod
    def from_flags(
        cls,
        *,
        bearer_tokens: Sequence[str] = (),
        allow_anonymous: bool = False,
        dev: bool = False,
        bound_host: str | None = None,
        admin_tokens: Sequence[str] = (),
    ) -> AuthChain:
        """The chain `agentkit serve` builds from its flags (table: docs/auth.md)."""
        hosts = [bound_host] if bound_host else []
        policies: list[AuthPolicy] = []
        if bearer_tokens or admin_tokens:
            policies.append(bearer_auth(bearer_tokens, admin_tokens))
        if allow_anonymous:
            policies.append(allow_all())
        if not policies:
            policies.append(local_dev_strict(hosts, admin=dev))
        elif dev:
            policies.insert(0, LocalDeveloper(hosts=frozenset(hosts)))
        return cls(policies, dev_admin=dev, local_hosts=hosts)

    def has_local_rights(self, request: Request, caller: Principal) -> bool:
        """Whether `caller` may have the local developer's rights (logs, dev routes): an
        admin, or the default loopback-only policy's caller (raises 421/403/415 for a
        loopback peer that fails the local-request checks)."""
        if caller.admin:
            return True
        if not (self.loopback_only and caller.id == LOCAL_PRINCIPAL):
            return False
        if not is_direct_loopback(request):
            return False
        check_local_request(request, self.local_hosts)
        return True

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.policies]

    def authenticate(self, request: Request) -> Principal:
        for policy in self.policies:
            principal = policy.admit(request)
            if principal is not None:
                return principal
        raise Unauthorized(self._refusal(request))

    def _refusal(self, request: Request) -> str:
        if any(isinstance(p, BearerAuth) for p in self.policies):
            return "missing bearer token (send Authorization: Bearer <token>)"
        if has_forwarding_headers(request):
            return "localDevStrict refuses proxied requests; serve with --bearer-token"
        return "localDevStrict admits loopback clients only; serve with --bearer-token"
