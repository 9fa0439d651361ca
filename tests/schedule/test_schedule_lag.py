"""The lag guard against a real replica: pt-heartbeat's table (checked against
`pt-heartbeat --check`), and replica status when there is no heartbeat table."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from govern.connection import connect as govern_connect
from govern.connection import resolve_settings
from govern.reports.schedule import schedule_report
from govern.schedulers.catalog import load_catalog
from govern.schedulers.night import run_night
from govern.schedulers.render import print_night
from govern.server import detect
from govern.state import StateStore
from govern.throttle.lag import measure_lag
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, worker_table

pytestmark = pytest.mark.server

PT_HEARTBEAT = shutil.which("pt-heartbeat")


def _replica_has(replica: MariaDB, table: str, timeout: float = 120) -> None:
    schema, name = table.split(".")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with replica.connect().cursor() as cur:  # type: ignore[attr-defined]
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
                (schema, name),
            )
            if cur.fetchone()[0]:
                return
        time.sleep(0.1)
    raise AssertionError(f"{table} did not replicate")


@pytest.mark.skipif(PT_HEARTBEAT is None, reason="pt-heartbeat (percona-toolkit) is not installed")
def test_lag_guard_reads_pt_heartbeat_and_keeps_jobs_off_a_lagging_replica(
    server: MariaDB, replica: MariaDB, connect: Any, state_path: Path, write_catalog: WriteCatalog
) -> None:
    table = f"percona.hb_{uuid.uuid4().hex[:8]}"
    with connect("govern_admin").cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS percona")
    primary_cnf = server.defaults_file("govern_admin")
    replica_cnf = replica.defaults_file("govern_admin")
    subprocess.run(
        [
            PT_HEARTBEAT or "",
            f"--defaults-file={primary_cnf}",
            "-D",
            "percona",
            "--table",
            table.split(".")[1],
            "--create-table",
            "--update",
            "--interval",
            "0.2",
            "--run-time",
            "1",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    _replica_has(replica, table)
    time.sleep(1.6)  # the heartbeat stopped: the replica's copy grows old, as if it lagged
    settings = resolve_settings(defaults_file=str(replica_cnf), environ={})
    conn = govern_connect(settings)
    ours = measure_lag(conn, detect(conn), table)
    check = subprocess.run(
        [
            PT_HEARTBEAT or "",
            f"--defaults-file={replica_cnf}",
            "-D",
            "percona",
            "--table",
            table.split(".")[1],
            "--check",
            "--master-server-id",
            "1",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    again = measure_lag(conn, detect(conn), table)
    conn.close()
    assert ours.source == f"pt-heartbeat {table}"
    assert ours.seconds is not None and again.seconds is not None
    assert ours.seconds - 0.3 <= float(check.stdout.strip()) <= again.seconds + 0.3
    assert ours.seconds > 1.5

    path = write_catalog(
        f'policy = "two-ended"\n[lag_guard]\nmax_lag = "1s"\nheartbeat_table = "{table}"\ncheck_interval = "0.2s"\n'
        + worker_table("main", primary_cnf)
        + worker_table("replica", replica_cnf)
        + '[jobs.a]\ncommand = "sleep 0.3"\n[jobs.b]\ncommand = "sleep 0.3"\n[jobs.c]\ncommand = "sleep 0.3"\n',
    )
    with StateStore.open(state_path) as store:
        night = run_night(load_catalog(path), store, show_progress=False, notify=lambda m: None)
    assert night["status"] == "ok"
    assert {j["worker"] for j in night["jobs"]} == {"main"}
    assert night["summary"]["lag_waits_s"]["replica"] > 0.5
    workers = {w["name"]: w for w in night["workers"]}
    assert workers["replica"]["lag_source"] == f"pt-heartbeat {table}"
    assert workers["replica"]["lag_s"] > 1
    # The lag guard is the throttler: its holds are in the night, with their reason.
    (hold,) = [h for h in night["holds"] if h["worker"] == "replica"]
    assert hold["check"] == "lag" and hold["work"] == "lag guard" and hold["job"] is None
    assert hold["reason"].startswith("replica lag ") and hold["reason"].endswith(
        f"> 1.00 s (pt-heartbeat {table})"
    )
    assert hold["seconds"] == pytest.approx(night["summary"]["lag_waits_s"]["replica"], abs=0.3)
    page = schedule_report(night)
    assert page.count('class="band"') == 1 and "Throttle holds" in page
    assert "held " in page and "by the lag guard" in page


def test_lag_guard_falls_back_to_replica_status(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    deadline = time.monotonic() + 120
    settings = resolve_settings(
        defaults_file=str(replica.defaults_file("govern_admin")), environ={}
    )
    conn = govern_connect(settings)
    lag = measure_lag(conn, detect(conn), "percona.no_such_heartbeat")
    while lag.seconds is None and time.monotonic() < deadline:  # the replica may still connect
        time.sleep(0.2)
        lag = measure_lag(conn, detect(conn), "percona.no_such_heartbeat")
    conn.close()
    assert lag.source == "replica status" and lag.seconds == 0
    path = write_catalog(
        'policy = "two-ended"\n[lag_guard]\nmax_lag = "5s"\nheartbeat_table = "percona.no_such_heartbeat"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "sleep 0.2"\n[jobs.b]\ncommand = "sleep 0.2"\n',
    )
    with StateStore.open(state_path) as store:
        night = run_night(load_catalog(path), store, show_progress=False, notify=lambda m: None)
    assert {j["worker"] for j in night["jobs"]} == {"main", "replica"}
    assert night["summary"]["lag_waits_s"]["replica"] == 0


def test_a_lagging_replica_stays_held_while_no_job_is_ready(
    server: MariaDB,
    replica: MariaDB,
    tmp_path: Path,
    state_path: Path,
    capsys: pytest.CaptureFixture[str],
    write_catalog: WriteCatalog,
) -> None:
    """Replication stopped (lag unknown counts as lagging): while the primary runs the only
    ready job, the replica is still lagging, so the guard never says it is back, and the
    time until nothing is left to start (job a's second) counts as a wait."""
    replica_root: Any = replica.connect()
    with replica_root.cursor() as cur:
        cur.execute("STOP SLAVE SQL_THREAD")
    messages: list[str] = []
    try:
        path = write_catalog(
            '[lag_guard]\nmax_lag = "5s"\nheartbeat_table = "percona.no_such_heartbeat"\n'
            'check_interval = "0.1s"\n'
            + worker_table("main", server.defaults_file("govern_admin"))
            + worker_table("replica", replica.defaults_file("govern_admin"))
            + '[jobs.a]\ncommand = "sleep 1"\nworkers = ["main"]\n'
            + '[jobs.b]\ncommand = "sleep 0.2"\ndepends_on = ["a"]\n',
        )
        with StateStore.open(state_path) as store:
            night = run_night(
                load_catalog(path), store, show_progress=False, notify=messages.append
            )
    finally:
        with replica_root.cursor() as cur:
            cur.execute("START SLAVE SQL_THREAD")
            position = server.connect().cursor()  # type: ignore[attr-defined]
            position.execute("SELECT @@gtid_binlog_pos")
            cur.execute("SELECT MASTER_GTID_WAIT(%s, 60)", (position.fetchone()[0],))
        replica_root.close()
    assert night["status"] == "ok"
    assert {j["worker"] for j in night["jobs"]} == {"main"}
    held = [m for m in messages if m.startswith("lag guard replica:")]
    assert len(held) == 1, held  # it holds once and is never said to go on
    assert held[0].startswith(
        "lag guard replica: holding: replica lag unknown on replica: replication is not running"
    )
    assert night["summary"]["lag_waits_s"]["replica"] >= 0.9
    print_night(night, jobs=False)  # what `govern schedule run` prints at the end
    waited = [line for line in capsys.readouterr().out.splitlines() if "replica lag" in line]
    assert len(waited) == 1 and waited[0].startswith("waited for replica lag: replica 1.")
