"""Session mode keeps others logged; global windows leave blind sessions, and govern names them.

Checked in the server's slow log file itself, with long_query_time 0 (log everything)
and a unique marker per statement.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.run.support import (
    binlog_events_since,
    binlog_position,
    finish,
    govern,
    history,
    job,
    run_args,
    set_global,
    start,
    value,
    wait_started,
)

pytestmark = pytest.mark.server


@pytest.fixture
def log_all(server: MariaDB, connect: Any) -> Iterator[Any]:
    """Slow log ON and long_query_time 0: every statement is logged unless exempt."""
    conn = connect()
    set_global(conn, "log_slow_query", "ON")
    set_global(conn, "long_query_time", "0")
    before = binlog_position(conn)
    yield conn
    assert binlog_events_since(connect(), before) == [], "govern wrote to the binary log"


def marker(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:12]}"


def logged(server: MariaDB, text: str) -> bool:
    """Whether ``text`` reached the slow log (entries may land just after the result)."""
    deadline = time.monotonic() + 1.0
    while True:
        if server.slow_log.exists() and text in server.slow_log.read_text(errors="replace"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def select(conn: Any, text: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SELECT '{text}'")
        cur.fetchall()


PYTHON_JOB = """
import os, sys, pymysql
from govern.wrappers.session import exempt
cnf, inside, after, other = sys.argv[1:5]
job = pymysql.connect(read_default_file=cnf, autocommit=True)
cur = job.cursor()
with exempt(job):
    cur.execute(f"SELECT '{inside}'")
    cur.execute("SELECT @@GLOBAL.log_slow_query, @@SESSION.log_slow_query")
    assert cur.fetchone() == (1, 0), "session mode must not touch the global"
cur.execute(f"SELECT '{after}'")
cur.execute("SELECT @@SESSION.log_slow_query")
assert cur.fetchone() == (1,), "the session's own value comes back"
others = pymysql.connect(read_default_file=cnf, autocommit=True)
others.cursor().execute(f"SELECT '{other}'")
pool = pymysql.connect(read_default_file=cnf, autocommit=True,
                       init_command=os.environ["GOVERN_INIT_COMMAND"])
pool.cursor().execute(f"SELECT '{inside}-pool'")
"""


def test_python_api_exempts_only_the_jobs_sessions(
    server: MariaDB, log_all: Any, state_path: Path
) -> None:
    inside, after, other = marker("inside"), marker("after"), marker("other")
    cnf = server.defaults_file("govern_app")
    result = subprocess.run(
        run_args(
            server,
            state_path,
            "--mode",
            "session",
            job=[sys.executable, "-c", PYTHON_JOB, str(cnf), inside, after, other],
            user="govern_app",  # session mode needs no privilege
        ),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "session mode" in result.stderr and "nothing global changes" in result.stderr
    assert logged(server, other), "another session must stay logged"
    assert logged(server, after), "the job's statements after the block are logged again"
    assert not logged(server, inside)
    assert not logged(server, f"{inside}-pool")
    assert value(log_all, "log_slow_query") == "1"


def test_auto_picks_session_for_a_mariadb_client_job(
    server: MariaDB, log_all: Any, state_path: Path
) -> None:
    cnf = server.defaults_file("govern_app")
    governed, control = marker("client"), marker("control")
    client = ["mariadb", f"--defaults-extra-file={cnf}", "-e"]
    result = subprocess.run(
        run_args(server, state_path, job=[*client, f"SELECT '{governed}'"], user="govern_app"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "session mode (the job is a MariaDB client" in result.stderr
    subprocess.run([*client, f"SELECT '{control}'"], check=True, capture_output=True)
    assert logged(server, control)
    assert not logged(server, governed)


def test_session_copy_trap_and_blind_connections(
    server: MariaDB, log_all: Any, connect: Any, state_path: Path, tmp_path: Path
) -> None:
    """Measured: a session opened while the log was off stays unlogged after the restore."""
    opened_before = connect()
    folder = tmp_path / "job"
    proc = start(run_args(server, state_path, "--mode", "global", job=job(folder)))
    wait_started(folder, proc)
    opened_during = connect()
    with opened_during.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        during_id = cur.fetchone()[0]
    finish(folder)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert value(log_all, "log_slow_query") == "1"

    before_text, during_text = marker("before"), marker("during")
    select(opened_before, before_text)
    select(opened_during, during_text)
    assert logged(server, before_text)
    assert not logged(server, during_text)  # blind until it reconnects

    assert "opened while log_slow_query was OFF" in err and f"KILL {during_id};" in err
    run = history(state_path)[0]
    assert during_id in [c["id"] for c in run["blind_connections"]]
    status = subprocess.run(
        govern(server, state_path, "status", "--json"), capture_output=True, text=True
    )
    assert status.returncode == 1
    blind = json.loads(status.stdout)["blind_connections"]
    assert [c["id"] for c in blind] == [during_id]
    assert blind[0]["run_id"] == run["id"]
    opened_during.close()
    status = subprocess.run(
        govern(server, state_path, "status", "--json"), capture_output=True, text=True
    )
    assert status.returncode == 0, status.stdout
    assert json.loads(status.stdout)["blind_connections"] == []


def test_threshold_window_sessions_keep_the_raised_threshold(
    server: MariaDB, log_all: Any, connect: Any, state_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    proc = start(
        run_args(server, state_path, "--mode", "threshold", "--threshold", "7", job=job(folder))
    )
    wait_started(folder, proc)
    opened_during = connect()
    finish(folder)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert value(log_all, "long_query_time") == "0.0"
    with opened_during.cursor() as cur:
        cur.execute("SELECT @@SESSION.long_query_time")
        assert cur.fetchone()[0] == 7.0
    assert "opened while long_query_time was 7s" in err


OPTING_OUT_JOB = """
import os, sys, pymysql
cnf, text = sys.argv[1:3]
conn = pymysql.connect(read_default_file=cnf, autocommit=True,
                       init_command=os.environ["GOVERN_INIT_COMMAND"])
conn.cursor().execute(f"SELECT '{text}'")
"""


def test_auto_picks_session_for_a_job_that_declares_it_opts_out(
    server: MariaDB, log_all: Any, connect: Any, state_path: Path
) -> None:
    """``--opts-out``: the job passes $GOVERN_INIT_COMMAND to its connections itself."""
    governed, control = marker("declared"), marker("control")
    cnf = server.defaults_file("govern_app")
    result = subprocess.run(
        run_args(
            server,
            state_path,
            "--opts-out",
            job=[sys.executable, "-c", OPTING_OUT_JOB, str(cnf), governed],
        ),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "session mode (the job opts its sessions out (--opts-out))" in result.stderr
    assert history(state_path)[0]["mode"] == "session"
    select(connect(), control)
    assert logged(server, control)
    assert not logged(server, governed)
    assert value(log_all, "long_query_time") == "0.0"  # nothing global changed


def test_the_end_line_counts_the_connections_a_window_blinded(
    server: MariaDB, log_all: Any, connect: Any, state_path: Path, tmp_path: Path
) -> None:
    """Connections opened and closed during a threshold window: gone at the end, but their
    statements were judged by the raised threshold; the end of the run says how many."""
    folder = tmp_path / "job"
    proc = start(
        run_args(server, state_path, "--mode", "threshold", "--threshold", "7", job=job(folder))
    )
    wait_started(folder, proc)
    for _ in range(3):
        connect().close()
    finish(folder)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "3 connections were opened while long_query_time was 7s" in err, err
    window = history(state_path)[0]["window"]
    assert window["connections_opened"] == 3


def test_status_names_the_connection_once(server: MariaDB, state_path: Path) -> None:
    """A socket connection is ``user@localhost via /path``: the line must not say "via" twice."""
    cnf = server.defaults_file("govern_admin", tcp=False)
    done = subprocess.run(
        [sys.executable, "-m", "govern", "status", "--defaults-file", str(cnf),
         "--state", str(state_path)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.endswith(f"connected as govern_admin@localhost via {server.socket}"), first
    assert first.count(" via ") == 1
