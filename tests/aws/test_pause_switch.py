"""The kill switch on AWS: an SSM parameter, read over HTTP from a moto server, with a
short cache; and the deployed host's settings name it (`AGENTKIT_PAUSE_PARAMETER`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from agentkit.aws.pause_switch import SsmSwitch, parse_value
from agentkit.aws.settings import AwsSettings


@pytest.fixture
def ssm(dynamodb_endpoint: str) -> Iterator[Any]:
    client = boto3.client("ssm", region_name="us-east-1", endpoint_url=dynamodb_endpoint)
    try:
        yield client
    finally:
        client.close()


def parameter() -> str:
    return f"/agentkit/t{uuid.uuid4().hex[:10]}/paused"


async def test_no_parameter_is_off_and_an_operators_on_is_seen(ssm: Any) -> None:
    name = parameter()
    switch = SsmSwitch(ssm, name, cache=0.0)
    assert not (await switch.read()).on
    ssm.put_parameter(Name=name, Value="on", Type="String", Overwrite=True)  # by hand
    assert (await switch.read()).on
    ssm.put_parameter(Name=name, Value="off", Type="String", Overwrite=True)
    assert not (await switch.read()).on


async def test_set_records_who_pulled_it_and_lifting_turns_it_off(ssm: Any) -> None:
    name = parameter()
    switch = SsmSwitch(ssm, name, cache=0.0)
    state = await switch.set(True, by="ops")
    assert (state.on, state.by) == (True, "ops")
    again = await switch.set(True, by="someone-else")
    assert again.by == "ops"  # already on: the first puller stays on record
    assert ssm.get_parameter(Name=name)["Parameter"]["Value"].startswith("on ")
    assert not (await switch.set(False, by="ops")).on
    assert ssm.get_parameter(Name=name)["Parameter"]["Value"] == "off"


async def test_reads_are_cached_briefly(ssm: Any) -> None:
    name = parameter()
    switch = SsmSwitch(ssm, name, cache=60.0)
    assert not (await switch.read()).on
    ssm.put_parameter(Name=name, Value="on", Type="String", Overwrite=True)
    assert not (await switch.read()).on  # within the cache: the last answer
    fresh = SsmSwitch(ssm, name, cache=60.0)
    assert (await fresh.read()).on


def test_values_that_mean_on() -> None:
    assert parse_value("on").on and parse_value("TRUE").on and parse_value("paused").on
    assert not parse_value("off").on and not parse_value("").on and not parse_value(None).on
    assert parse_value('on {"by": "ops"}').by == "ops"


def test_the_settings_name_the_parameter() -> None:
    env = {
        "AGENTKIT_SESSIONS_TABLE": "s",
        "AGENTKIT_EVENTS_TABLE": "e",
        "AGENTKIT_PAUSE_PARAMETER": "/agentkit/stack/paused",
    }
    assert AwsSettings.from_env(env).pause_parameter == "/agentkit/stack/paused"
