"""The README's first picture is what `make serve` shows: the weather example, served as
`make serve` serves it, answering a weather question and then parking its approval-gated
`save_favorite` call. `docs/images/playground-approval.png` is this test's screenshot; run
it with UPDATE_DOCS_IMAGES=1 to write the picture again."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.project.bundle import AgentBundle
from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot
from tests.playground.test_playground import send, wait_turns_done

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "weather"
PICTURE = REPO / "docs" / "images" / "playground-approval.png"


@pytest.fixture
def weather(tmp_path: Path) -> Iterator[Served]:
    project = tmp_path / "weather"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".agentkit", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "AGENTKIT_MODEL"}
    served = Served(project, tmp_path / "state", ["--dev"], env).start()  # as `make serve`
    yield served
    served.stop()


def test_the_weather_example_has_the_approval_the_readme_shows() -> None:
    tools = {t.name: t for t in AgentBundle.discover(EXAMPLE).manifest.tools}
    assert tools["save_favorite"].needs_approval is True
    assert tools["get_weather"].needs_approval is False
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/images/playground-approval.png)" in readme and "save_favorite" in readme


def test_the_readme_picture_is_the_served_weather_example(
    weather: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory(width=1200, height=800)
    page.goto(f"{weather.root_url}/weather/playground")
    page.locator("#agent-name", has_text="weather").wait_for()
    page.locator("body[data-ready]").wait_for(state="attached")
    send(page, "What is the weather in Paris?")
    wait_turns_done(page, 1)
    assert page.locator("details.tool .tool-name").first.inner_text() == "get_weather"
    send(page, "Save Paris as my favorite city")
    approve = page.get_by_role("button", name="Approve")
    approve.wait_for()
    card = page.locator("details.tool", has_text="save_favorite")
    assert card.locator(".tool-state").inner_text() == "needs approval"
    assert '"city": "Paris"' in card.inner_text()
    page.get_by_label("Message").blur()  # no focus ring in the picture
    taken = shot(page, "readme-approval")
    if os.environ.get("UPDATE_DOCS_IMAGES") == "1":
        shutil.copyfile(taken, PICTURE)

    approve.click()
    wait_turns_done(page, 2)
    card.locator("summary").click()  # a finished call folds up; open it
    assert '"favorite": "Paris"' in card.inner_text()
