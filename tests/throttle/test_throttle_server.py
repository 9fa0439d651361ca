"""The throttle on the real MariaDB: status-variable and query checks, critical stops after
the current batch, ``govern throttle wait``'s exit codes, replicas found from the primary,
and the checks handed to jobs by ``govern run --throttle`` and a catalog's [throttle]."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from govern.cli import cli
from govern.connection import resolve_settings
from govern.schedulers.catalog import load_catalog
from govern.schedulers.night import run_night
from govern.state import StateStore
from govern.throttle import open_throttler, parse_items
from govern.throttle.record import all_holds
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, worker_table
from tests.throttle.support import GOVERN, caught_up, govern, scalar, wait_for

pytestmark = pytest.mark.server


def test_throttle_wait_exit_codes_and_document(server: MariaDB, tmp_path: Path) -> None:
    cnf = str(server.defaults_file("govern_admin"))
    state = str(tmp_path / "state.db")
    ok = govern(
        "throttle",
        "wait",
        "--defaults-file",
        cnf,
        "--state",
        state,
        "--json",
        "max_load=Threads_running=1000",
    )
    assert ok.returncode == 0, ok.stderr
    document = json.loads(ok.stdout)
    assert document["schema"] == "govern.throttle.wait" and document["schema_version"] == 1
    assert document["holds"] == [] and document["checks"] == ["load Threads_running"]
    # Threads_running counts the check's own statement: it is never below 1.
    held = govern(
        "throttle",
        "wait",
        "--defaults-file",
        cnf,
        "--state",
        state,
        "max_load=Threads_running=0",
        "interval=0.2s",
        "max_wait=1s",
    )
    assert held.returncode == 75
    assert re.search(rf"holding: Threads_running \d+ > 0 on 127.0.0.1:{server.port}\n", held.stderr)
    assert "max_wait 1.00 s reached" in held.stderr
    critical = govern(
        "throttle",
        "wait",
        "--defaults-file",
        cnf,
        "--state",
        state,
        "critical_load=Threads_running=0",
    )
    assert critical.returncode == 3
    assert (
        critical.stderr.strip()
        .splitlines()[-1]
        .startswith("govern: error: critical: Threads_running")
    )
    usage = govern("throttle", "wait", "--defaults-file", cnf, "max_load=Threads_runing=5")
    assert usage.returncode == 2
    assert "has no status variable 'Threads_runing'" in usage.stderr
    with StateStore.open(state) as store:
        recorded = all_holds(store)
    assert [(h["check"], h["critical"]) for h in recorded] == [("load", False), ("load", True)]
    assert all(h["work"] == "govern throttle wait" and h["ended_at"] for h in recorded)


def test_a_query_check_holds_while_it_returns_a_positive_value(
    server: MariaDB, connect: Any, admin_settings: Any
) -> None:
    conn = connect("root")
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS app.freeze (on_hold INT NOT NULL)")
        cur.execute("DELETE FROM app.freeze")
    spec = parse_items(
        ["query=SELECT COUNT(*) FROM app.freeze WHERE on_hold = 1", "interval=0.05s"]
    )
    with open_throttler(spec, admin_settings, work="test", notify=None) as throttler:
        assert throttler.poll(force=True) == []
        with conn.cursor() as cur:
            cur.execute("INSERT INTO app.freeze VALUES (1), (1)")
        (reading,) = throttler.poll(force=True)
        assert reading.value == 2 and "returned 2" in reading.reason
    with pytest.raises(Exception) as error:  # a query the server refuses is a usage error
        open_throttler(
            parse_items(["query=SELECT nope FROM app.freeze"]),
            admin_settings,
            work="test",
            notify=None,
        )
    assert "Unknown column 'nope'" in str(error.value)


def test_a_critical_check_stops_the_load_after_the_current_batch(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path
) -> None:
    conn = connect("root")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.critical_load")
        cur.execute("CREATE TABLE app.critical_load (id INT PRIMARY KEY, v INT)")
    csv = tmp_path / "rows.csv"
    csv.write_text("id,v\n" + "".join(f"{i},{i}\n" for i in range(1, 5001)))
    # The server's count of INSERT statements passes the bound at the fifth batch.
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Com_insert'")
        bound = int(cur.fetchone()[1]) + 4
    result = CliRunner().invoke(
        cli,
        [
            "load",
            str(csv),
            "-t",
            "app.critical_load",
            "-k",
            "id",
            "--batch-size",
            "100",
            "--throttle",
            f"critical_load=Com_insert={bound}",
            "--throttle",
            "interval=0.01s",
            "--json",
            "--state",
            str(state_path),
            "--defaults-file",
            str(server.defaults_file("govern_admin")),
        ],
    )
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    written = report["written"]
    assert not report["complete"] and report["exit_code"] == 3
    # Whole batches, stopped after the bound and before the end. The check is polled once
    # per interval (0.01 s), not per batch: on a quiet server several 100-row batches fit
    # in one interval (CI once wrote 1,100 rows), so the stop is not pinned to batch 5.
    assert written % 100 == 0 and 500 <= written < 5000
    assert scalar(conn, "SELECT COUNT(*) FROM app.critical_load") == written
    # The check saw exactly the batches written: it stopped the load between two batches.
    inserts = bound - 4 + written // 100
    assert report["error"].startswith(f"critical: Com_insert {inserts} > {bound}")
    (hold,) = report["throttle"]["holds"]
    assert hold["critical"] and hold["value"] > bound


def test_replicas_are_found_from_the_primary(
    server: MariaDB, replica: MariaDB, connect: Any, tmp_path: Path
) -> None:
    """SHOW SLAVE HOSTS names the replica; the checks reach it with the primary's account
    (created binlogged here, so it exists on both, as a DBA's account would)."""
    password = "throttle-pw-1"
    with connect("root").cursor() as cur:
        cur.execute(
            "CREATE USER IF NOT EXISTS 'govern_throttle'@'127.0.0.1' IDENTIFIED BY %s", (password,)
        )
        cur.execute(
            "GRANT SELECT, SLAVE MONITOR, REPLICATION MASTER ADMIN ON *.*"
            " TO 'govern_throttle'@'127.0.0.1'"
        )
    caught_up(server, replica)
    cnf = tmp_path / "throttle.cnf"
    cnf.write_text(
        f"[client]\nhost=127.0.0.1\nport={server.port}\nuser=govern_throttle\npassword={password}\n"
    )
    os.chmod(cnf, 0o600)
    settings = resolve_settings(defaults_file=str(cnf), environ={})
    with open_throttler(parse_items(["max_lag=30s"]), settings, work="test", notify=None) as t:
        (check,) = t.checks
        assert [link.label for link in check.replicas] == [f"127.0.0.1:{replica.port}"]  # type: ignore[attr-defined]
        assert t.poll(force=True) == []
        (reading,) = t.readings
        assert reading.value == 0 and reading.source == "replica status"


def test_govern_run_hands_the_checks_to_the_job_and_history_lists_its_holds(
    server: MariaDB, tmp_path: Path, state_path: Path
) -> None:
    flag = tmp_path / "hold.flag"
    flag.write_text("")
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/sh\n"
        'printenv GOVERN_THROTTLE > "$1/handoff.json"\n'
        f'"{sys.executable}" -m govern throttle wait\n'
        'echo $? > "$1/code"\n'
    )
    script.chmod(0o755)
    run = subprocess.Popen(
        [
            *GOVERN,
            "run",
            "--defaults-file",
            str(server.defaults_file("govern_admin")),
            "--state",
            str(state_path),
            "--mode",
            "session",
            "--name",
            "purge",
            "--throttle",
            f"flag_file={flag}",
            "--throttle",
            "interval=0.1s",
            "--",
            str(script),
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def open_hold() -> bool:
        if not state_path.exists():
            return False
        with StateStore.open(state_path) as store:
            return any(h["ended_at"] is None for h in all_holds(store))

    wait_for(open_hold, 60, "the job holding")
    time.sleep(0.5)
    flag.unlink()
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 0, stderr
    assert (tmp_path / "code").read_text().strip() == "0"
    handoff = json.loads((tmp_path / "handoff.json").read_text())
    assert handoff["state"] == str(state_path)
    assert server.passwords["govern_admin"] not in (tmp_path / "handoff.json").read_text()
    assert not Path(handoff["defaults_file"]).exists()  # the account's file went with the job
    listed = govern("history", "--state", str(state_path), "--json")
    document = json.loads(listed.stdout)
    (purge,) = [r for r in document["runs"] if r["name"] == "purge"]
    (hold,) = purge["holds"]
    assert hold["reason"] == f"flag file {flag} exists" and hold["run_id"] == purge["id"]
    assert 0.5 <= purge["held_s"] <= 30
    assert hold in document["holds"]
    text = CliRunner().invoke(cli, ["history", "--state", str(state_path)], env={"COLUMNS": "200"})
    assert "held" in text.output and "flag_file" in text.output


def test_a_catalog_throttle_reaches_every_job_and_the_night_records_their_holds(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    flag = tmp_path / "hold.flag"
    flag.write_text("")
    # The second job lifts the flag once the first is seen holding (in the night's state file).
    (tmp_path / "release.py").write_text(
        "import json, os, sqlite3, time\n"
        "state = json.loads(os.environ['GOVERN_THROTTLE'])['state']\n"
        "query = 'SELECT COUNT(*) FROM throttle_holds WHERE ended_at IS NULL'\n"
        "while not sqlite3.connect(state).execute(query).fetchone()[0]:\n"
        "    time.sleep(0.05)\n"
        "time.sleep(0.5)\n"
        f"os.remove({str(flag)!r})\n"
    )
    path = write_catalog(
        f'[throttle]\nflag_file = "{flag.name}"\ninterval = "0.1s"\n'
        + worker_table("main", server.defaults_file("govern_admin"), concurrency=2)
        + f'[jobs.held]\ncommand = ["{sys.executable}", "-m", "govern", "throttle", "wait"]\n'
        + f'[jobs.release]\ncommand = ["{sys.executable}", "release.py"]\n',
    )
    with StateStore.open(state_path) as store:
        night = run_night(load_catalog(path), store, show_progress=False, notify=lambda m: None)
    assert night["status"] == "ok"
    (hold,) = night["holds"]
    assert hold["job"] == "held" and hold["night_id"] == night["id"]
    assert hold["reason"] == f"flag file {flag} exists" and hold["seconds"] >= 0.4
    assert hold["work"] == "govern throttle wait"


def test_a_bad_catalog_throttle_is_a_file_line_error(
    tmp_path: Path, server: MariaDB, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        '[throttle]\nmax_lag = "2s"\nmax_load = "Threads_running"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n',
    )
    with pytest.raises(Exception) as error:
        load_catalog(path)
    assert str(error.value) == (f"{path}:3: expected STATUS_VARIABLE=NUMBER, got 'Threads_running'")


def test_a_lag_poll_is_one_statement_once_the_heartbeat_is_known(
    server: MariaDB, replica: MariaDB, connect: Any, admin_settings: Any
) -> None:
    """The heartbeat table's shape and the source's server_id are read once; each later poll
    sends one SELECT (counted by the replica session's own Questions)."""
    from govern.connection import connect as govern_connect
    from govern.server import detect
    from govern.throttle.lag import LagReader

    with connect("root").cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS percona")
        cur.execute(
            "CREATE TABLE IF NOT EXISTS percona.hb_polls (server_id INT PRIMARY KEY, ts VARCHAR(26))"
        )
        cur.execute(
            "REPLACE INTO percona.hb_polls VALUES (1, DATE_FORMAT(NOW(6), '%Y-%m-%dT%H:%i:%s.%f'))"
        )
    caught_up(server, replica)
    conn = govern_connect(
        resolve_settings(defaults_file=str(replica.defaults_file("govern_admin")), environ={})
    )
    info = detect(conn)
    reader = LagReader("percona.hb_polls")

    def questions() -> int:
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Questions'")
            return int(cur.fetchone()[1])

    before = questions()
    first = reader.read(conn, info)
    after_first = questions()
    for _ in range(10):
        lag = reader.read(conn, info)
    after_ten = questions()
    conn.close()
    assert first.source == "pt-heartbeat percona.hb_polls" and lag.seconds is not None
    assert after_first - before - 1 == 3  # columns, replica status, the row (minus SHOW STATUS)
    assert after_ten - after_first - 1 == 10  # one statement a poll
