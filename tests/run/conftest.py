"""Fixtures of the ``govern run`` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.run.support import reap


@pytest.fixture(autouse=True)
def _end_leftover_runs() -> Iterator[None]:
    """After each test, end the wrappers it started (and their jobs), even when it failed."""
    yield
    reap()
