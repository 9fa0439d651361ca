"""govern's own footprint: its connections stay out of the slow log they govern.

With ``long_query_time = 0`` every statement is slow. Each govern command that talks to the
server is run as a user runs it; afterwards the slow log must hold none of govern's own
statements (docs/design/run-crash-safety.md, "govern's own footprint"), while a plain
client's statements of the same moment are there, and ``govern load``'s rows (the user's
workload) are there too, tagged ``/* govern:load */``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern.slowlog import iter_events
from tests.harness import MariaDB
from tests.paths import REPO

pytestmark = pytest.mark.server

GOVERN = [sys.executable, "-m", "govern"]
#: Statements only govern sends: none may reach the log.
GOVERN_STATEMENTS = (
    "IS_USED_LOCK",
    "GET_LOCK",
    "SHOW GLOBAL VARIABLES",
    "SHOW GRANTS",
    "information_schema",
    "SET NAMES",
    "CONNECTION_ID()",
    "wait_timeout",
)


@pytest.fixture
def every_statement_slow(server: MariaDB, connect: Any) -> Iterator[Any]:
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL log_slow_query = ON")
        cur.execute("SET GLOBAL long_query_time = 0")
        # binlogged, like the rows the load writes: a replica of this server keeps up
        cur.execute("CREATE TABLE IF NOT EXISTS app.footprint (id INT PRIMARY KEY, v INT)")
        cur.execute("TRUNCATE app.footprint")
    yield conn
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL long_query_time = 10")


def _govern(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GOVERN, *args], capture_output=True, text=True, **kwargs)


def _events_since(server: MariaDB, offset: int, marker: str) -> list[str]:
    """Statements logged after ``offset``, once ``marker`` (the test's last) is in."""
    deadline = time.monotonic() + 10
    while True:
        data = server.slow_log.read_bytes()[offset:]
        queries = [event.query for event in iter_events(data)]
        if any(marker in q for q in queries) or time.monotonic() > deadline:
            return queries
        time.sleep(0.1)


def test_govern_commands_leave_no_statement_in_the_slow_log(
    server: MariaDB, every_statement_slow: Any, connect: Any, tmp_path: Path
) -> None:
    admin = str(server.defaults_file("govern_admin"))
    state = str(tmp_path / "state.db")
    plain = connect("govern_app")
    offset = server.slow_log.stat().st_size
    with plain.cursor() as cur:
        cur.execute("SELECT 'a plain client before' FROM DUAL")

    for mode in ("global", "threshold", "session"):
        done = _govern(
            "run", "--defaults-file", admin, "--state", state, "--mode", mode, "--", "true"
        )
        assert done.returncode == 0, done.stderr
    for command in ("status", "recover"):
        done = _govern(command, "--defaults-file", admin, "--state", state)
        assert done.returncode in (0, 1), done.stderr
    done = _govern("doctor", "--defaults-file", admin)
    assert done.returncode in (0, 1), done.stderr
    catalog = tmp_path / "night.toml"
    catalog.write_text(
        'name = "footprint"\n[sizing]\nquery = "SELECT \'only\', 10"\n'
        "[defaults]\nwrap = true\n"
        f'[workers.w]\ndefaults_file = "{admin}"\n[jobs.only]\ncommand = "true"\n'
    )
    done = _govern("schedule", "run", str(catalog), "--state", state)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = tmp_path / "rows.csv"
    rows.write_text("id,v\n1,10\n2,20\n")
    done = _govern(
        "load", str(rows), "--defaults-file", admin, "--table", "app.footprint", "--key", "id"
    )
    assert done.returncode == 0, done.stderr

    with plain.cursor() as cur:
        cur.execute("SELECT 'a plain client after' FROM DUAL")
    queries = _events_since(server, offset, "a plain client after")

    assert any("a plain client before" in q for q in queries), "the log was not on"
    loads = [q for q in queries if q.startswith("/* govern:load */ INSERT INTO")]
    assert len(loads) == 1, "govern load's rows are the user's workload: logged, tagged"
    own = [
        q
        for q in queries
        if q not in loads and ("govern:" in q or any(s in q for s in GOVERN_STATEMENTS))
    ]
    assert own == [], f"{len(own)} of govern's own statements were logged, e.g. {own[:3]}"


def test_rows_of_a_load_under_session_mode_stay_out(
    server: MariaDB, every_statement_slow: Any, connect: Any, tmp_path: Path
) -> None:
    """``govern run -- govern load …``: auto picks session mode, the rows opt out too."""
    admin = str(server.defaults_file("govern_admin"))
    plain = connect("govern_app")
    offset = server.slow_log.stat().st_size
    rows = tmp_path / "rows.csv"
    rows.write_text("id,v\n3,30\n")
    done = _govern(
        "run",
        "--defaults-file",
        admin,
        "--state",
        str(tmp_path / "state.db"),
        "--",
        str(Path(sys.executable).parent / "govern"),
        "load",
        str(rows),
        "--defaults-file",
        admin,
        "--table",
        "app.footprint",
        "--key",
        "id",
    )
    assert done.returncode == 0, done.stderr
    assert "session mode" in done.stderr
    with plain.cursor() as cur:
        cur.execute("SELECT 'a plain client after the load' FROM DUAL")
    queries = _events_since(server, offset, "a plain client after the load")
    assert [q for q in queries if "govern:" in q or "footprint" in q] == []


def _connect_calls(path: Path) -> list[tuple[int, bool]]:
    """(line, names its command) for every call of govern.connection.connect in a module."""
    tree = ast.parse(path.read_text(), str(path))
    imported = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "govern.connection"
        and any(alias.name == "connect" for alias in node.names)
        for node in ast.walk(tree)
    )
    if not imported:
        return []
    return [
        (node.lineno, any(k.arg == "command" for k in node.keywords))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "connect"
    ]


def test_every_connection_govern_opens_names_its_command() -> None:
    """A new command cannot forget: every connect() in the package says whose it is."""
    calls = {}
    for folder in ("govern", "wrappers", "schedulers", "rules"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if os.path.islink(path.parent) or path.name == "connection.py":
                continue
            for line, named in _connect_calls(path):
                calls[f"{path.relative_to(REPO)}:{line}"] = named
    assert len(calls) >= 8, calls
    assert [where for where, named in calls.items() if not named] == []
