"""Shared test setup. Fixture plugins live in tests/fixtures/ (one module per concern)."""

from __future__ import annotations

import os
import pkgutil
from pathlib import Path

import pytest

# Tests never call a real model provider or a real AWS account.
# AGENTKIT_MODEL would take precedence over every agent file's model (and the models tests
# resolve with doubles); with it unset an agent that names no model runs the offline `test`
# model. Tests that exercise the variable set it themselves.
os.environ.pop("AGENTKIT_MODEL", None)
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
for _var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_PROFILE"):
    os.environ.pop(_var, None)

pytest_plugins = [
    f"tests.fixtures.{m.name}"
    for m in pkgutil.iter_modules([str(Path(__file__).parent / "fixtures")])
]

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked slow says why (`@pytest.mark.slow(reason=...)`): a slow test without
    a reason is a design problem nobody wrote down. (Checked as each test is set up, so
    that a parallel run reports it as a failure of that test.)"""
    for mark in item.iter_markers("slow"):
        if not (mark.kwargs.get("reason") or mark.args):
            pytest.fail("mark.slow needs a reason, as in @pytest.mark.slow(reason='...')")


TESTS = Path(__file__).resolve().parent


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`make smoke` (`-m smoke`) imports only the test files that can hold a smoke test:
    those that apply the mark themselves or sit under a conftest that does (the store's
    contract suite marks its file-store run there). Importing all the others only to
    deselect them was most of the smoke run's time."""
    if config.getoption("markexpr") != "smoke" or not collection_path.name.startswith("test_"):
        return None
    if collection_path.suffix != ".py":
        return None
    # This conftest applies no marks (and names the one it looks for): left out.
    folders = [d for d in collection_path.parents if TESTS in d.parents]
    sources = [collection_path, *(d / "conftest.py" for d in folders)]
    if any("mark.smoke" in p.read_text(encoding="utf-8") for p in sources if p.is_file()):
        return None
    return True
