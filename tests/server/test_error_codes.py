"""Errors people can act on: every code the server can answer with is documented, and
malformed JSON says where it broke, in words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentkit.server.http_errors import _CODES
from tests.fixtures.http_server import Served

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "agentkit"
# The ways a wire error code is written in the source: an HttpError's `code=` (keyword or
# class attribute), `error_response(status, "code", ...)`, and hand-built `{"error": "code"}`.
_PATTERNS = [
    re.compile(r'\bcode\s*=\s*"([a-z][a-z_]*)"'),
    re.compile(r'error_response\(\s*\d{3}\s*,\s*"([a-z][a-z_]*)"'),
    re.compile(r'"error"\s*:\s*"([a-z][a-z_]*)"'),
]
# Diagnostics (agent folder findings, not HTTP answers) also use `code=`.
_NOT_HTTP = ("project/", "aws/check.py")


def codes_in_source() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(_NOT_HTTP):
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in _PATTERNS:
            for match in pattern.finditer(text):
                found.setdefault(match.group(1), set()).add(rel)
    for code in _CODES.values():
        found.setdefault(code, set()).add("server/http_errors.py")
    return found


def documented_codes() -> set[str]:
    text = (REPO / "docs" / "http-api.md").read_text(encoding="utf-8")
    section = text[text.index("## Errors") :]
    return set(re.findall(r"^\| `([a-z_]+)` \| `\d{3}` \|", section, flags=re.M))


def test_the_scan_finds_codes_raised_in_several_ways() -> None:
    found = codes_in_source()
    # one of each form, so a broken pattern cannot pass the test below vacuously
    assert "session_busy" in found  # Conflict(..., code="session_busy")
    assert "eval_runs_unavailable" in found  # class attribute
    assert "internal_error" in found  # error_response(500, "internal_error", ...)
    assert "invalid_json" in found
    assert "unsupported_media_type" in found  # the status fallback table
    assert len(found) >= 25


def test_every_error_code_is_in_the_http_api_table() -> None:
    missing = set(codes_in_source()) - documented_codes()
    assert not missing, f"codes the server can return but docs/http-api.md does not list: {missing}"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


@pytest.mark.slow(reason="drives every error route of a served agent")
@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"message": }', "expecting value at line 1, column 13"),
        (b'{\n  "message": "hi",\n}', "at line 3, column 1"),
        (b'{"message": "hi"', "at line 1, column 17"),
    ],
)
def test_malformed_json_says_where_in_plain_words(
    client: httpx.Client, shared_server: Served, body: bytes, where: str
) -> None:
    r = client.post(
        f"{shared_server.url}/v1/session",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    answer = r.json()
    assert answer["ok"] is False and answer["error"] == "invalid_json"
    assert answer["message"].startswith("the request body is not valid JSON: ")
    assert where in answer["message"]
    assert "JSON decode error" not in answer["message"]
