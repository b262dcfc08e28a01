"""Schema-valid example values for a JSON Schema, preferring words from a user message.

The test model uses this to call tools with arguments that pass validation. It handles the
schemas pydantic emits (`$ref`/`$defs`, `anyOf` for optionals, `allOf`, enums, constants,
nested objects, arrays, tuples, defaults, numeric bounds, string lengths and formats).
A `pattern` is honoured when one of a handful of candidates matches it; otherwise the value
is best effort.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.models._pattern import string_matching


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`, for membership tests."""
    return frozenset(text.split())


# Field names whose value is naturally the user's whole request.
_TEXT_NAMES = word_set(
    "query q text message prompt question search input content body task instructions "
    "topic subject request note comment"
)
# Field names whose value is naturally a proper noun from the request (a city, a person).
_NAME_NAMES = word_set(
    "city location place country town region destination origin address person user "
    "name company from to where target symbol ticker title label keyword term tag"
)
# Capitalised words that start questions and requests rather than name things.
_NOT_NAMES = word_set(
    "what whats what's how is are can could would will should please tell give show "
    "find get the a an i i'm hi hello hey and or in on at for to of it this that do "
    "does did when where which who why use call run make check let"
)
_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T12:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "PT1H",
}
_PATTERN_CANDIDATES = ("example", "a", "A", "abc", "ABC", "a1", "A1", "1", "123", "x-1")
_MAX_DEPTH = 12
# Past this depth only required fields and minimum array lengths are generated, so that
# recursive models (a tree of nodes) end.
_SHALLOW = 4
_MISSING: Any = object()


def field_words(name: str) -> list[str]:
    """`cityName`, `city_name` and `city-name` all give `["city", "name"]`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


@dataclass(frozen=True, slots=True)
class Hints:
    """Values found in a user message that string and number fields may take."""

    message: str
    quoted: tuple[str, ...]
    names: tuple[str, ...]
    numbers: tuple[float, ...]

    @classmethod
    def from_message(cls, message: str) -> Hints:
        quoted = tuple(m for pair in re.findall(r'"([^"]+)"|“([^”]+)”', message) for m in pair if m)
        names: list[str] = []
        opening: list[str] = []  # capitalised maybe only because a sentence starts with it
        for match in re.finditer(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*", message):
            words = match.group(0).split()
            before = message[: match.start()].rstrip()
            if not before or before.endswith((".", "!", "?")):
                first = words.pop(0)
                if first.lower() not in _NOT_NAMES:
                    opening.append(first.strip("'-"))
            phrase = " ".join(w for w in words if w.lower() not in _NOT_NAMES).strip("'-")
            if phrase and phrase not in names:
                names.append(phrase)
        names.extend(w for w in opening if w and w not in names)
        numbers = tuple(
            float(n) for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", message)
        )
        return cls(message.strip(), quoted, tuple(names), numbers)

    def strings_for(self, name: str, variant: int) -> list[str]:
        words = set(field_words(name))
        out: list[str] = []
        # Only the n-th hint for the n-th array item, so that items stay distinct.
        if words & _TEXT_NAMES and self.message and variant == 0:
            out.append(self.message)
        if variant < len(self.quoted):
            out.append(self.quoted[variant])
        if words & _NAME_NAMES and variant < len(self.names):
            out.append(self.names[variant])
        return out


def example_value(schema: Mapping[str, Any], message: str = "") -> Any:
    """A value valid against `schema`, using words from `message` where a field fits."""
    return _Generator(schema, Hints.from_message(message)).value(schema, "", 0, 0)


def example_arguments(schema: Mapping[str, Any], message: str = "") -> dict[str, Any]:
    """Tool-call arguments (always an object) valid against an input schema."""
    value = example_value(schema, message)
    return value if isinstance(value, dict) else {}


class _Generator:
    def __init__(self, root: Mapping[str, Any], hints: Hints) -> None:
        self.root = root
        self.hints = hints

    def resolve(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        out = dict(schema)
        while "$ref" in out and depth < _MAX_DEPTH:
            target = self.lookup(str(out.pop("$ref")))
            out = {**target, **out}
            depth += 1
        for part in out.pop("allOf", None) or []:
            merged = self.resolve(part, depth + 1)
            props = {**merged.get("properties", {}), **out.get("properties", {})}
            required = [*merged.get("required", []), *out.get("required", [])]
            out = {**merged, **out}
            if props:
                out["properties"] = props
            if required:
                out["required"] = required
        return out

    def lookup(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for part in ref.lstrip("#").split("/"):
            if not part:
                continue
            key = part.replace("~1", "/").replace("~0", "~")
            node = node.get(key, {}) if isinstance(node, Mapping) else {}
        return node if isinstance(node, Mapping) else {}

    def value(self, raw: Mapping[str, Any], name: str, variant: int, depth: int) -> Any:
        schema = self.resolve(raw, depth)
        if depth > _MAX_DEPTH:
            return None
        if "const" in schema:
            return schema["const"]
        branches = schema.get("anyOf") or schema.get("oneOf")
        # What the message says beats a default; a default beats an invented value.
        hinted = _MISSING if branches else self.hinted(schema, name, variant)
        if hinted is not _MISSING:
            return hinted
        if "default" in schema and variant == 0:
            return copy.deepcopy(schema["default"])
        if schema.get("enum"):
            options = list(schema["enum"])
            return options[variant % len(options)]
        if branches:
            return self.value(self.pick_branch(branches, depth), name, variant, depth + 1)
        return self.typed(schema, name, variant, depth)

    def typed(self, schema: Mapping[str, Any], name: str, variant: int, depth: int) -> Any:
        kind = self.kind(schema)
        if kind == "object":
            return self.object(schema, variant, depth)
        if kind == "array":
            return self.array(schema, name, depth)
        if kind == "integer":
            return self.integer(schema, variant)
        if kind == "number":
            return self.number(schema, variant)
        if kind == "boolean":
            return variant % 2 == 0
        if kind == "null":
            return None
        return self.string(schema, name, variant)

    def pick_branch(self, branches: list[Any], depth: int) -> Mapping[str, Any]:
        # A non-null branch gives a more telling value than `None` for an optional field.
        for branch in branches:
            if self.kind(self.resolve(branch, depth + 1)) != "null":
                return dict(branch)
        return dict(branches[0])

    @staticmethod
    def kind(schema: Mapping[str, Any]) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            real = [k for k in kind if k != "null"]
            kind = real[0] if real else "null"
        if isinstance(kind, str):
            return kind
        if "properties" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        return "string"

    def hinted(self, schema: Mapping[str, Any], name: str, variant: int) -> Any:
        """A value for this field taken from the message, or `_MISSING`."""
        if schema.get("enum"):
            lowered = self.hints.message.lower()
            mentioned = [
                o
                for o in schema["enum"]
                if isinstance(o, str) and o and re.search(rf"\b{re.escape(o.lower())}\b", lowered)
            ]
            return mentioned[variant] if variant < len(mentioned) else _MISSING
        kind = self.kind(schema)
        if kind in ("integer", "number"):
            found = self.numbers(schema)
            return found[variant] if variant < len(found) else _MISSING
        if kind == "string" and schema.get("format") not in _FORMATS:
            for candidate in self.hints.strings_for(name, variant):
                if _string_ok(schema, candidate):
                    return candidate
        return _MISSING

    def numbers(self, schema: Mapping[str, Any]) -> list[float | int]:
        """Numbers in the message that this integer or number field accepts."""
        lo, hi, lo_open, hi_open = self.bounds(schema)
        step = schema.get("multipleOf")
        whole = self.kind(schema) == "integer"
        return [
            int(n) if whole else n
            for n in self.hints.numbers
            if (n.is_integer() or not whole)
            and _fits_open(n, lo, hi, lo_open, hi_open)
            and _multiple(n, step)
        ]

    def object(self, schema: Mapping[str, Any], variant: int, depth: int) -> dict[str, Any]:
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out = {
            key: self.value(sub, key, variant, depth + 1)
            for key, sub in props.items()
            if depth <= _SHALLOW or key in required
        }
        extra = schema.get("additionalProperties")
        wanted = int(schema.get("minProperties", 0))
        i = 0
        while len(out) < wanted and extra is not False:
            sub = extra if isinstance(extra, Mapping) else {}
            out.setdefault(f"key{i}", self.value(sub, f"key{i}", i, depth + 1))
            i += 1
        return out

    def array(self, schema: Mapping[str, Any], name: str, depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        if prefix:
            return [self.value(p, name, i, depth + 1) for i, p in enumerate(prefix)]
        items = schema.get("items")
        item_schema: Mapping[str, Any] = items if isinstance(items, Mapping) else {}
        least = int(schema.get("minItems", 0))
        count = max(least, 1) if depth <= _SHALLOW else least
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        return [self.value(item_schema, name, i, depth + 1) for i in range(count)]

    @staticmethod
    def bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None, bool, bool]:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        lo_ex, hi_ex = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        # Draft 4 spells exclusivity as a boolean beside minimum/maximum.
        lo_open = lo_ex is True
        hi_open = hi_ex is True
        if isinstance(lo_ex, int | float) and not isinstance(lo_ex, bool):
            lo, lo_open = lo_ex, True
        if isinstance(hi_ex, int | float) and not isinstance(hi_ex, bool):
            hi, hi_open = hi_ex, True
        return lo, hi, lo_open, hi_open

    def integer(self, schema: Mapping[str, Any], variant: int) -> int:
        lo_f, hi_f, lo_open, hi_open = self.bounds(schema)
        lo = None if lo_f is None else (math.floor(lo_f) + 1 if lo_open else math.ceil(lo_f))
        hi = None if hi_f is None else (math.ceil(hi_f) - 1 if hi_open else math.floor(hi_f))
        step = schema.get("multipleOf")
        found = self.numbers({**schema, "type": "integer"})
        # The k-th free value from the lowest allowed one: array items stay distinct from
        # each other and from the numbers the message supplied to earlier items.
        value = lo if lo is not None else min(1, hi) if hi is not None else 1
        free = max(0, variant - len(found))
        while value in found or free > 0:
            if value not in found:
                free -= 1
            value += 1
        if hi is not None and value > hi:
            value = hi
        if isinstance(step, int | float) and step > 0:
            value = int(math.ceil(value / step) * step)
            if hi is not None and value > hi:
                value = int(math.floor(hi / step) * step)
        return value

    def number(self, schema: Mapping[str, Any], variant: int) -> float | int:
        if isinstance(schema.get("multipleOf"), int | float):
            return self.integer({**schema, "type": "integer"}, variant)
        lo, hi, lo_open, hi_open = self.bounds(schema)
        if lo is not None and hi is not None:
            if not lo_open:
                return lo
            return hi if not hi_open else (lo + hi) / 2
        if lo is not None:
            return lo + 1 + variant if lo_open else lo + variant
        if hi is not None:
            return min(1.0, hi - 1 if hi_open else hi) - variant
        return 1.0 + variant

    def string(self, schema: Mapping[str, Any], name: str, variant: int) -> str:
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            candidates = [_FORMATS[fmt]]
        else:
            base = "example" if variant == 0 else f"example-{variant + 1}"
            candidates = [base]
        pattern = schema.get("pattern")
        fitted = [_fit(c, lo, hi) for c in candidates]
        if not isinstance(pattern, str):
            return fitted[0]
        try:
            regex = re.compile(pattern)
        except re.error:
            return fitted[0]
        built = string_matching(pattern)
        extra = [built] if built is not None else []
        for candidate in [*fitted, *extra, *_PATTERN_CANDIDATES]:
            if _fits_length(candidate, lo, hi) and regex.search(candidate):
                return candidate
        return built if built is not None else fitted[0]


def _fit(text: str, lo: int, hi: Any) -> str:
    if len(text) < lo:
        text = text + "x" * (lo - len(text))
    if isinstance(hi, int) and len(text) > hi:
        text = text[:hi]
    return text


def _fits_length(text: str, lo: int, hi: Any) -> bool:
    return len(text) >= lo and (not isinstance(hi, int) or len(text) <= hi)


def _string_ok(schema: Mapping[str, Any], text: str) -> bool:
    if not _fits_length(text, int(schema.get("minLength", 0)), schema.get("maxLength")):
        return False
    pattern = schema.get("pattern")
    if not isinstance(pattern, str):
        return True
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _multiple(n: float, step: Any) -> bool:
    return not isinstance(step, int | float) or step <= 0 or (n / step).is_integer()


def _fits_open(n: float, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> bool:
    above = lo is None or (n > lo if lo_open else n >= lo)
    below = hi is None or (n < hi if hi_open else n <= hi)
    return above and below
