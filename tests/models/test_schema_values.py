"""Generated tool arguments validate against the pydantic models that made the schemas."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import StrEnum
from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, HttpUrl

from agentkit.models._schema_values import example_arguments, example_value


class Unit(StrEnum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Weather(BaseModel):
    city: str = Field(description="City name")
    unit: Unit = Unit.CELSIUS
    days: int = Field(default=1, ge=1, le=7)


class Address(BaseModel):
    street: str = Field(min_length=3, max_length=5)
    zip: str = Field(pattern=r"^\d{5}$")
    country: Literal["FR", "DE", "NO"]


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    home: Address
    others: list[Address] = Field(min_length=2)
    nickname: str | None = None


class Ranges(BaseModel):
    percent: float = Field(gt=0, lt=1)
    count: int = Field(gt=10, le=12)
    step: int = Field(ge=7, multiple_of=5)
    negative: float = Field(lt=-3)
    tags: list[str] = Field(min_length=3, max_length=3)
    unique: set[int] = Field(min_length=3)
    pair: tuple[int, str, bool]


class Formats(BaseModel):
    when: dt.datetime
    day: dt.date
    id: uuid.UUID
    site: HttpUrl
    code: Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{3,}$")]


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(ge=1, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pets(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")
    either: Cat | Dog
    by_name: dict[str, int] = Field(min_length=1)


class Node(BaseModel):
    """A recursive model: its schema refers to itself."""

    label: str
    children: list[Node] = Field(default_factory=list)


class SearchQuery(BaseModel):
    query: str
    limit: int = Field(ge=1, le=50)


MODELS = [Weather, Person, Ranges, Formats, Pets, Node, SearchQuery]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize(
    "message",
    [
        "",
        "What's the weather in Paris for 3 days?",
        'Find "blue shoes" for Ada in Oslo, 40 results',
    ],
)
def test_generated_arguments_validate(model, message):
    args = example_arguments(model.model_json_schema(), message)
    model.model_validate(args)


def test_a_city_field_takes_the_place_named_in_the_message():
    args = example_arguments(Weather.model_json_schema(), "What's the weather in New York?")
    assert args["city"] == "New York"


@pytest.mark.parametrize(
    ("message", "city"),
    [("Weather in Lisbon?", "Lisbon"), ("Compare Paris and Berlin", "Paris")],
)
def test_a_word_capitalised_only_by_the_sentence_start_is_the_last_choice(message, city):
    assert example_arguments(Weather.model_json_schema(), message)["city"] == city


def test_an_enum_value_named_in_the_message_is_chosen():
    args = example_arguments(Weather.model_json_schema(), "Weather in Oslo in fahrenheit please")
    assert args["unit"] == "fahrenheit"


def test_a_number_in_the_message_is_used_when_in_bounds():
    assert example_arguments(Weather.model_json_schema(), "Oslo for 5 days")["days"] == 5
    assert example_arguments(Weather.model_json_schema(), "Oslo for 50 days")["days"] == 1


def test_a_query_field_takes_the_whole_message():
    args = example_arguments(SearchQuery.model_json_schema(), "cheap flights to Rome")
    assert args["query"] == "cheap flights to Rome"


def test_a_quoted_phrase_fills_a_string_field():
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    assert example_arguments(schema, 'Create a note called "Groceries"') == {"title": "Groceries"}


def test_defaults_are_used_for_fields_that_have_one():
    args = example_arguments(Weather.model_json_schema(), "Paris")
    assert args["unit"] == "celsius" and args["days"] == 1


def test_plain_json_schemas_work_too():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["integer", "null"], "minimum": 4},
            "b": {
                "type": "array",
                "items": {"enum": [1, 2, 3]},
                "minItems": 2,
                "uniqueItems": True,
            },
            "c": {"const": "fixed"},
            "d": {
                "allOf": [
                    {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}
                ]
            },
        },
        "required": ["a", "b", "c", "d"],
    }
    assert example_arguments(schema) == {"a": 4, "b": [1, 2], "c": "fixed", "d": {"x": True}}


def test_non_object_schemas_still_give_a_value():
    assert example_value({"type": "string", "minLength": 10}) == "examplexxx"
    assert example_arguments({"type": "string"}) == {}


PLAIN_SCHEMAS = {
    "nested with refs": {
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        },
        "type": "object",
        "properties": {
            "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "minItems": 2}
        },
        "required": ["points"],
        "additionalProperties": False,
    },
    "draft 4 exclusive bounds": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 5, "exclusiveMinimum": True, "maximum": 7}
        },
        "required": ["n"],
    },
    "open map with a minimum size": {
        "type": "object",
        "additionalProperties": {"type": "string", "format": "email"},
        "minProperties": 2,
    },
    "patterns and lengths": {
        "type": "object",
        "properties": {
            "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "short": {"type": "string", "maxLength": 2},
            "either": {"oneOf": [{"type": "null"}, {"type": "string", "enum": ["x", "y"]}]},
        },
        "required": ["sku", "short", "either"],
    },
    "unique arrays": {
        "type": "object",
        "properties": {
            "ids": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 4,
                "uniqueItems": True,
            }
        },
        "required": ["ids"],
    },
}


@pytest.mark.parametrize("name", sorted(PLAIN_SCHEMAS))
@pytest.mark.parametrize("message", ["", "Order 3 of ABC-1234 for Lena"])
def test_plain_schemas_validate_with_jsonschema(name, message):
    schema = PLAIN_SCHEMAS[name]
    args = example_arguments(schema, message)
    Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_pydantic_schemas_also_validate_with_jsonschema(model):
    schema = model.model_json_schema()
    Draft202012Validator(schema).validate(example_arguments(schema, "Weather in Paris, 3 days"))
