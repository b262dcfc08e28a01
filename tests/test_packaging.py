"""pyproject.toml states its licence the SPDX way, so building a wheel warns about nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_licence_is_an_spdx_expression() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["license"] == "Apache-2.0"
    # the string form needs setuptools 77 or newer at build time
    assert "setuptools>=77" in data["build-system"]["requires"]
