"""The JSON of one server-sent event, shared by the protocols that stream them."""

from __future__ import annotations

import json
from typing import Any


def sse_json(value: Any) -> str:
    """`value` as JSON that always encodes to UTF-8: text with lone surrogates (a client's
    id or message can carry them as valid JSON escapes) is written with JSON escapes
    instead, so the stream does not break off mid-response."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True)
    return text
