"""Fixtures of the scheduler tests: catalogs written into the test's own folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.schedule.support import WriteCatalog


@pytest.fixture
def write_catalog(tmp_path: Path) -> WriteCatalog:
    """``write_catalog(body, name="summaries.toml")``: a catalog file in ``tmp_path`` from an
    indented TOML snippet; SQL files and scripts it names go beside it."""

    def write(body: str, name: str = "summaries.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(body).lstrip())
        return path

    return write
