"""`govern schedule serve` on two "hosts" (two processes, each its own state store) against one
catalog with `[schedule] lease`: one is active (a lock on the primary), the other a standby.
The active one is SIGKILLed mid-night: the standby takes over within the lease and finishes
that night, and no job runs twice (the summary table on the primary and both records say so)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from govern.schedulers.history import History
from govern.schedulers.lease import serve_lock_name
from govern.state import StateStore
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, gone, wait_until, worker_table

pytestmark = pytest.mark.server

JOBS = 6
LEASE = 2.0
SUMMARY = "app.standby_summary"
#: Each job runs a while on the replica, then writes its summary row on the primary, tagged
#: with the serve ("host") that ran it. A list command, so the script itself is the process
#: that gets the parent-death signal (``sh -c`` would get it and leave the script running).
JOB = f"""#!/bin/sh
touch started.$GOVERN_JOB
sleep 1.5
"$(command -v mariadb || command -v mysql)" --defaults-file="$GOVERN_PRIMARY_CNF" \\
  -e "INSERT INTO {SUMMARY} (job, host) VALUES ('$GOVERN_JOB', '$SERVE_HOST')"
"""


def _serve(path: Path, state: Path, host: str, cwd: Path) -> subprocess.Popen[bytes]:
    log = open(cwd / f"serve-{host}.log", "wb")  # noqa: SIM115 - the child keeps it
    env = {**os.environ, "SERVE_HOST": host}
    args = [sys.executable, "-m", "govern", "schedule", "serve", str(path), "--state", str(state)]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)


def _rows(conn: Any, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def _night(state: Path) -> dict[str, Any]:
    with StateStore.open(state) as store:
        history = History(store)
        [night_id] = history.night_ids(ran_only=False, limit=10)
        night = history.night(night_id)
    assert night is not None
    return night


def test_the_standby_takes_over_a_killed_night_and_runs_no_job_twice(
    server: MariaDB,
    replica: MariaDB,
    connect: Any,
    tmp_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    root = connect("root")
    _rows(root, f"DROP TABLE IF EXISTS {SUMMARY}")
    _rows(
        root,
        f"CREATE TABLE {SUMMARY} (job VARCHAR(64), host CHAR(1), at DATETIME(6) DEFAULT NOW(6))",
    )
    _rows(root, "SET SESSION sql_log_bin = 0")  # the ledger is the primary's alone
    _rows(root, "DROP TABLE IF EXISTS govern.schedule_ledger")
    path = write_catalog(
        'name = "twohosts"\npolicy = "fifo"\nkill_grace = "1s"\n'
        f'[schedule]\ncron = "0 1 * * *"\ntimezone = "UTC"\nmisfire_grace = "1h"\nlease = "{LEASE:g}s"\n'
        f'[primary]\ndefaults_file = "{server.defaults_file("govern_admin")}"\n'
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + "".join(f'[jobs.j{i}]\ncommand = ["./job.sh"]\n' for i in range(1, JOBS + 1))
    ).resolve()
    (tmp_path / "job.sh").write_text(JOB)
    (tmp_path / "job.sh").chmod(0o755)
    state_a, state_b = tmp_path / "a" / "state.db", tmp_path / "b" / "state.db"
    owed = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    with StateStore.open(state_a) as store:  # host A owes tonight's night: it starts at once
        History(store).remember_fire("twohosts", "cron 0 1 * * * UTC", owed)

    a = _serve(path, state_a, "A", tmp_path)
    b = None
    try:
        wait_until(lambda: (tmp_path / "started.j1").exists(), timeout=30)
        b = _serve(path, state_b, "B", tmp_path)
        wait_until(lambda: b"standby for twohosts" in (tmp_path / "serve-B.log").read_bytes())

        def ledger() -> dict[str, str]:
            rows = _rows(
                root,
                "SELECT job, state FROM govern.schedule_ledger WHERE schedule = 'twohosts'",
            )
            return {str(job): str(state) for job, state in rows}

        # kill -9 while j3 sleeps, j1 and j2 recorded ok: mid-night, no job between its
        # end and its record
        wait_until(
            lambda: list(ledger().values()).count("ok") == 2 and ledger().get("j3") == "running",
            timeout=30,
        )
        a.kill()
        killed_at = time.monotonic()
        a.wait(timeout=10)
        wait_until(lambda: b"active for twohosts" in (tmp_path / "serve-B.log").read_bytes())
        took_over = time.monotonic() - killed_at
        wait_until(lambda: ledger().get("") in ("ok", "failed"), timeout=60)
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)

    log_b = (tmp_path / "serve-B.log").read_text()
    assert took_over <= LEASE + 1.0, (took_over, log_b)
    summary = _rows(root, f"SELECT job, host FROM {SUMMARY} ORDER BY at")
    ran = [str(job) for job, _ in summary]
    assert sorted(ran) == [f"j{i}" for i in range(1, JOBS + 1)], summary  # each exactly once
    hosts = [str(h) for _, h in summary]
    assert hosts[:2] == ["A", "A"] and hosts[-1] == "B", summary

    night_a, night_b = _night(state_a), _night(state_b)
    assert night_a["status"] == "running"  # killed: its own store cannot say otherwise
    assert night_b["status"] == "ok", log_b
    assert night_b["scheduled_for"] == night_a["scheduled_for"] == owed
    assert night_b["note"].startswith("takes over the night from ")
    ok_a = {j["name"] for j in night_a["jobs"] if j["outcome"] == "ok"}
    ok_b = {j["name"] for j in night_b["jobs"] if j["outcome"] == "ok"}
    assert ok_a == {"j1", "j2"} and not ok_a & ok_b
    assert ok_a | ok_b == {f"j{i}" for i in range(1, JOBS + 1)}
    assert {j["name"] for j in night_b["jobs"]} == ok_b  # B ran only what A left
    # B's summary covers the whole night, A's part from the ledger, on one clock from A's start
    assert night_b["summary"]["jobs"] == night_b["summary"]["done"] == JOBS
    assert min(j["start_s"] for j in night_b["jobs"]) > 3.0  # after j1 and j2's 1.5 s each
    assert {f"j{i}": "ok" for i in range(1, JOBS + 1)}.items() <= ledger().items()
    # the ledger stayed on the primary: written with sql_log_bin = 0, never on the replica
    time.sleep(1)
    tables = _rows(
        replica.connect(),  # type: ignore[attr-defined]
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'schedule_ledger'",
    )
    assert tables == [(0,)]
    assert "taking over the night scheduled for " + owed in log_b
    assert serve_lock_name("twohosts") in log_b


def test_an_active_serve_that_loses_its_lock_stops_its_jobs_and_exits_3(
    server: MariaDB, connect: Any, tmp_path: Path, write_catalog: WriteCatalog
) -> None:
    """Its lock connection killed on the primary: a standby may be active already, so it must
    not run on beside it. The night stays unfinished in the ledger, for the standby."""
    root = connect("root")
    _rows(root, "SET SESSION sql_log_bin = 0")
    _rows(root, "DROP TABLE IF EXISTS govern.schedule_ledger")
    path = write_catalog(
        'name = "fenced"\nkill_grace = "1s"\n'
        f'[schedule]\ncron = "0 1 * * *"\ntimezone = "UTC"\nmisfire_grace = "1h"\nlease = "1s"\n'
        f'[primary]\ndefaults_file = "{server.defaults_file("govern_admin")}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + "[jobs.long]\ncommand = 'echo $$ > long.pid; exec sleep 60'\n"
    ).resolve()
    state = tmp_path / "state.db"
    with StateStore.open(state) as store:
        owed = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
        History(store).remember_fire("fenced", "cron 0 1 * * * UTC", owed)
    proc = _serve(path, state, "A", tmp_path)
    try:
        wait_until(
            lambda: (tmp_path / "long.pid").exists() and bool((tmp_path / "long.pid").read_text())
        )
        job_pid = int((tmp_path / "long.pid").read_text())
        [(holder,)] = _rows(root, "SELECT IS_USED_LOCK(%s)", serve_lock_name("fenced"))
        _rows(root, f"KILL CONNECTION {int(holder)}")
        assert proc.wait(timeout=20) == 3
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "serve-A.log").read_text()
    assert "lost lock govern.serve.fenced on the primary" in log
    assert log.rstrip().endswith("govern: error: serve of fenced lost its lock on the primary")
    assert gone(job_pid, 3)
    [(state_of_night,)] = _rows(
        root,
        "SELECT state FROM govern.schedule_ledger WHERE schedule = 'fenced' AND job = ''",
    )
    assert state_of_night == "running"  # the standby's to go on with
    assert _night(state)["status"] == "interrupted"


def test_a_lease_needs_a_primary(tmp_path: Path, write_catalog: WriteCatalog) -> None:
    path = write_catalog(
        'name = "alone"\n[schedule]\ncron = "0 1 * * *"\nlease = "10s"\n'
        '[workers.main]\nhost = "localhost"\n[jobs.a]\ncommand = "true"\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "govern",
            "schedule",
            "serve",
            str(path),
            "--state",
            str(tmp_path / "s.db"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"govern: error: {path}:4: lease: serve on two hosts holds its lock on the primary:"
        " the catalog needs [primary]\n"
    )
