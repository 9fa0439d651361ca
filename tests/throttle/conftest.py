"""Fixtures of the throttle tests: the scheduler's catalog writer, for a night's ``[throttle]``."""

from __future__ import annotations

from tests.schedule.conftest import write_catalog

__all__ = ["write_catalog"]
