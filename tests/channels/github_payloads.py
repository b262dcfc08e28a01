"""Deliveries shaped and signed as GitHub sends them (headers included)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import uuid
from typing import Any

REPO = {
    "id": 4242,
    "name": "widgets",
    "full_name": "octo/widgets",
    "private": False,
    "owner": {"login": "octo", "id": 1, "type": "Organization"},
    "html_url": "https://github.com/octo/widgets",
}


# GitHub gives every comment an id of its own (replays are deduplicated on it).
_COMMENT_IDS = itertools.count(5550000)


def user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10**6, "type": kind}


def pull_request(action: str, number: int, *, title: str, head: str, body: str = "") -> dict:
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "url": f"https://api.github.com/repos/octo/widgets/pulls/{number}",
            "id": 900000 + number,
            "number": number,
            "state": "open",
            "title": title,
            "body": body,
            "html_url": f"https://github.com/octo/widgets/pull/{number}",
            "user": user("contributor"),
            "draft": False,
            "head": {"ref": "feature", "sha": head, "repo": REPO},
            "base": {"ref": "main", "sha": "0" * 40, "repo": REPO},
        },
        "repository": REPO,
        "sender": user("contributor"),
        "installation": {"id": 77},
    }


def issue_comment(
    number: int, text: str, *, login: str, association: str = "NONE", kind: str = "User"
) -> dict:
    return {
        "action": "created",
        "issue": {
            "number": number,
            "title": "a PR",
            "html_url": f"https://github.com/octo/widgets/pull/{number}",
            "pull_request": {"url": f"https://api.github.com/repos/octo/widgets/pulls/{number}"},
            "user": user("contributor"),
        },
        "comment": {
            "id": next(_COMMENT_IDS),
            "body": text,
            "user": user(login, kind),
            "author_association": association,
        },
        "repository": REPO,
        "sender": user(login, kind),
    }


def delivery(
    event: str, payload: dict[str, Any], secret: str | None, *, delivery_id: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """The raw body and the headers GitHub would send with it."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/a1b2c3d",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "123456",
        "X-GitHub-Hook-Installation-Target-Type": "repository",
        "X-GitHub-Hook-Installation-Target-ID": "4242",
    }
    if secret is not None:
        headers["X-Hub-Signature-256"] = (
            "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        )
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(secret.encode(), body, "sha1").hexdigest()
    return body, headers
