"""Fixtures: a real throwaway MariaDB, connections to it, and an isolated environment.

Every test runs with HOME, XDG_STATE_HOME and the MySQL/GOVERN environment
variables pointed at a private temp dir, so the machine's ~/.my.cnf and default
server can never leak in. The server is the one ``scripts/test`` started
(``GOVERN_TEST_SERVER_DIR``) or, when run as plain ``pytest``, one started here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from govern.connection import ConnectionSettings, resolve_settings
from tests.harness import MariaDB

#: Collects every JSON document govern prints, for tests/docs/test_json_contracts.py.
pytest_plugins = ["tests.docs.plugin"]

#: Global variables tests may change; restored after every test that uses ``server``.
RESTORED_VARIABLES = (
    "slow_query_log",
    "long_query_time",
    "log_output",
    "log_slow_verbosity",
    "event_scheduler",
    "query_cache_type",
    "query_cache_size",
    "read_only",
    "max_allowed_packet",
    "log_slow_rate_limit",
    "min_examined_row_limit",
    "sql_mode",
)

_ISOLATED_ENV = (
    "GOVERN_DSN",
    "GOVERN_STATE",
    "MYSQL_PWD",
    "MYSQL_HOST",
    "MYSQL_TCP_PORT",
    "MYSQL_UNIX_PORT",
    # rich reads these: the caller's terminal settings must not change what tests see
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLUMNS",
    "LINES",
)


def pytest_configure(config: pytest.Config) -> None:
    # rustup's cargo finds its toolchain under $HOME unless told: keep the real one, or
    # the wheel test's build skips the (optional) native core.
    for name, folder in (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")):
        if name not in os.environ and (Path.home() / folder).is_dir():
            os.environ[name] = str(Path.home() / folder)
    home = Path(tempfile.mkdtemp(prefix="govern-home-"))
    os.environ["HOME"] = str(home)
    os.environ["XDG_STATE_HOME"] = str(home / "state")
    for name in _ISOLATED_ENV:
        os.environ.pop(name, None)
    # TERM=dumb (some CI runners, `env -i ... TERM=dumb`) turns rich's live progress
    # off even on a pty, so the tests that give govern a terminal would see no bar.
    if os.environ.get("TERM", "").lower() in ("", "dumb", "unknown"):
        os.environ["TERM"] = "xterm"
    config.stash[_home_key] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_home_key, None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


_home_key = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDB]:
    """The session's throwaway MariaDB (started by scripts/test, or here)."""
    given = os.environ.get("GOVERN_TEST_SERVER_DIR")
    if given:
        server = MariaDB(Path(given))
        server.start()  # no-op when running; restarts it if a test left it down
        yield server
        return
    base = Path(tempfile.mkdtemp(prefix="govern-test-server-"))
    server = MariaDB(base)
    server.start()
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def server(mariadb: MariaDB) -> Iterator[MariaDB]:
    """The server, up, with the global variables tests may change put back afterwards."""
    if mariadb.pid() is None:
        mariadb.start()
    conn: Any = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(
            "SELECT Variable_name, Variable_value FROM information_schema.GLOBAL_VARIABLES"
            f" WHERE Variable_name IN ({', '.join(['%s'] * len(RESTORED_VARIABLES))})",
            [v.upper() for v in RESTORED_VARIABLES],
        )
        baseline = dict(cur.fetchall())
    conn.close()
    yield mariadb
    if mariadb.pid() is None:
        mariadb.start()
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for name, value in baseline.items():
            try:
                cur.execute(f"SET GLOBAL {name} = %s", (value,))
            except pymysql.err.MySQLError:
                cur.execute(f"SET GLOBAL {name} = {value}")
    conn.close()


@pytest.fixture
def connect(server: MariaDB) -> Iterator[Callable[..., Any]]:
    """Factory for new, independent connections: ``connect("govern_app", tcp=True)``."""
    opened: list[Any] = []

    def factory(user: str = "root", **kwargs: Any) -> Any:
        conn = server.connect(user, **kwargs)
        opened.append(conn)
        return conn

    yield factory
    for conn in opened:
        with contextlib.suppress(pymysql.err.Error):  # already closed or killed by the test
            conn.close()


@pytest.fixture
def admin_settings(server: MariaDB) -> ConnectionSettings:
    """Settings for the privileged harness account, through its option file."""
    return resolve_settings(defaults_file=str(server.defaults_file("govern_admin")), environ={})


@pytest.fixture
def app_settings(server: MariaDB) -> ConnectionSettings:
    """Settings for the unprivileged account (DML on the `app` schema only)."""
    return resolve_settings(defaults_file=str(server.defaults_file("govern_app")), environ={})


@pytest.fixture(scope="session")
def replica(mariadb: MariaDB) -> Iterator[MariaDB]:
    """A second server replicating from the session's server (started on first use)."""
    base = Path(tempfile.mkdtemp(prefix="govern-test-replica-"))
    server = MariaDB(base, server_id=2)
    server.start()
    server.start_replica_of(mariadb)
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "govern.db"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's) through Playwright; skips with the reason when absent."""
    from tests.browser import launch

    yield from launch()
