"""Fixtures of the digest tests: slow logs recorded from the test MariaDB."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.digest import slowlogs
from tests.digest.support import record_workload, rules_workload
from tests.harness import MariaDB


@pytest.fixture(scope="session")
def recorded_log(mariadb: MariaDB, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mixed workload of support.record_workload (long_query_time=0, query plans,
    explains), recorded once for every test that reads it."""
    return record_workload(mariadb, tmp_path_factory.mktemp("recorded") / "slow.log")


@pytest.fixture(scope="session")
def rules_log(mariadb: MariaDB, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """support.rules_workload recorded once: each digest rule's anti-pattern and its cure."""
    path = tmp_path_factory.mktemp("rules") / "slow.log"
    return record_workload(mariadb, path, rules_workload)


@pytest.fixture
def record_log(server: MariaDB, connect: Any) -> Callable[[str, Callable[[Any], None]], Path]:
    """``record_log(name, workload)``: the slow log of ``workload(connection)`` run as the app
    account (slowlogs.record)."""
    return lambda name, workload: slowlogs.record(server, connect, name, workload)


@pytest.fixture
def recording(server: MariaDB) -> Callable[[str], contextlib.AbstractContextManager[Path]]:
    """``with recording(name) as log:``: everything run in the block lands in ``log``."""
    return lambda name: slowlogs.recording(server, name)
