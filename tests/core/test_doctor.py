"""``govern doctor`` against the real server, privileged and unprivileged, and unreachable."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from click.testing import CliRunner

from govern import native
from govern.cli import cli
from govern.connection import ConnectionSettings, connect
from govern.doctor import SCHEMA, SCHEMA_VERSION, run_doctor
from tests.harness import MariaDB

pytestmark = pytest.mark.server


def doctor_json(server: MariaDB, user: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        cli, ["doctor", "--json", "--defaults-file", str(server.defaults_file(user))]
    )
    return result.exit_code, json.loads(result.output)


def features(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["key"]: f for f in report["features"]}


def test_privileged_account(server: MariaDB, connect: Any) -> None:
    root = connect()
    with root.cursor() as cur:
        cur.execute("SET GLOBAL event_scheduler = ON")
    code, report = doctor_json(server, "govern_admin")
    assert report["schema"] == SCHEMA and report["schema_version"] == SCHEMA_VERSION
    assert report["server"]["flavor"] == "mariadb"
    assert report["account"] == "'govern_admin'@'127.0.0.1'"
    assert report["slow_log"]["variable"] == "log_slow_query"
    assert report["slow_log"]["file"] == str(server.slow_log)
    assert report["event_scheduler"] == "ON"
    assert report["replication"]["is_replica"] is False
    assert report["digest_engine"]["name"] == ("native" if native.available() else "python")
    ready = features(report)
    for key in (
        "run.session",
        "run.global",
        "run.deadman",
        "run.liveness",
        "schedule.replica",
        "digest.server_log",
    ):
        assert ready[key]["ready"], (key, ready[key]["missing"])
    assert code == 0


def test_unprivileged_account_gets_the_grants_that_fix_it(server: MariaDB) -> None:
    code, report = doctor_json(server, "govern_app")
    assert code == 1
    ready = features(report)
    assert ready["run.session"]["ready"] is True
    assert ready["run.global"]["ready"] is False
    assert "GRANT SUPER ON *.* TO 'govern_app'@'127.0.0.1';" in ready["run.global"]["fixes"]
    assert ready["run.deadman"]["ready"] is False
    assert any("EVENT" in fix for fix in ready["run.deadman"]["fixes"])
    assert ready["run.liveness"]["fixes"] == ["GRANT PROCESS ON *.* TO 'govern_app'@'127.0.0.1';"]
    assert report["replication"]["is_replica"] is None
    assert "SLAVE MONITOR" in report["replication"]["error"]


def test_grant_fixes_really_fix(server: MariaDB, connect: Any) -> None:
    """Apply the GRANTs doctor printed to a fresh account; doctor then reports it ready."""
    root = connect()
    with root.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("DROP USER IF EXISTS 'doc_fix'@'127.0.0.1'")
        cur.execute("CREATE USER 'doc_fix'@'127.0.0.1' IDENTIFIED BY 'pw'")
    settings = ConnectionSettings(host="127.0.0.1", port=server.port, user="doc_fix", password="pw")
    conn = connect_settings(settings)
    report = run_doctor(conn, settings)
    conn.close()
    fixes = [
        fix for f in report.features if f.key in ("run.global", "run.liveness") for fix in f.fixes
    ]
    assert fixes
    with root.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for fix in fixes:
            cur.execute(fix)
    conn = connect_settings(settings)
    report = run_doctor(conn, settings)
    conn.close()
    assert {f.key: f.ready for f in report.features}["run.global"] is True
    assert {f.key: f.ready for f in report.features}["run.liveness"] is True
    with root.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("DROP USER 'doc_fix'@'127.0.0.1'")


def connect_settings(settings: ConnectionSettings) -> Any:
    return connect(settings)


def test_doctor_changes_nothing(server: MariaDB, connect: Any) -> None:
    root = connect()

    def snapshot() -> tuple[Any, ...]:
        with root.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            binlog = cur.fetchall()
            cur.execute("SHOW GLOBAL VARIABLES")
            variables = {
                k: v for k, v in cur.fetchall() if k not in ("gtid_binlog_pos", "gtid_current_pos")
            }
            return binlog, variables

    before = snapshot()
    doctor_json(server, "govern_admin")
    doctor_json(server, "govern_app")
    assert snapshot() == before


def test_text_output_names_server_and_features(server: MariaDB) -> None:
    result = CliRunner().invoke(
        cli,
        ["doctor", "--defaults-file", str(server.defaults_file("govern_app"))],
        env={"COLUMNS": "250"},
    )
    assert result.exit_code == 1
    assert "MariaDB 10.11" in result.output
    assert "digest engine" in result.output
    assert "fix: GRANT SUPER ON *.* TO 'govern_app'@'127.0.0.1';" in result.output


def test_unreachable_server_is_one_line_and_exit_3() -> None:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "govern", "doctor", "-h", "127.0.0.1", "-P", "1", "-u", "nobody"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "govern: error: cannot connect to nobody@127.0.0.1:1"
    )
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - start < 15


def test_replica_is_reported_with_lag(server: MariaDB, replica: MariaDB, connect: Any) -> None:
    root = connect()
    with root.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS doctor_repl")
        cur.execute("DROP DATABASE doctor_repl")
        cur.execute("SELECT @@gtid_binlog_pos")
        (position,) = cur.fetchone()
    # a replica started on a long-lived server replays its whole binary log, reporting the age
    # of old events as lag: judge it once it has applied everything written so far
    applier: Any = replica.connect()
    with applier.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))
        assert cur.fetchone() == (0,), "the replica did not catch up in 60 s"
    applier.close()
    settings = ConnectionSettings(
        host="127.0.0.1", port=replica.port, user="root", password=replica.passwords["root"]
    )
    deadline = time.monotonic() + 30
    while True:
        conn = connect_settings(settings)
        report = run_doctor(conn, settings).to_json()
        conn.close()
        if report["replication"]["lag_seconds"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report["replication"]["is_replica"] is True
    assert report["replication"]["lag_seconds"] == 0
    assert report["server"]["read_only"] is True
    deadman = {f["key"]: f for f in report["features"]}["run.deadman"]
    assert deadman["ready"] is False
    assert any("never writes to it" in m for m in deadman["missing"])


def test_a_stopped_replica_is_described_in_words(replica: MariaDB) -> None:
    """Replication stopped by hand: no "lag unknown s", no warning ending on a colon."""
    root: Any = replica.connect()
    with root.cursor() as cur:
        cur.execute("STOP SLAVE SQL_THREAD")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "govern", "doctor", "--defaults-file",
             str(replica.defaults_file("govern_admin"))],
            capture_output=True,
            text=True,
        )  # fmt: skip
    finally:
        with root.cursor() as cur:
            cur.execute("START SLAVE SQL_THREAD")
        root.close()
    assert "lag unknown (replication is not running)" in done.stdout, done.stdout
    assert "unknown s" not in done.stdout
    (warning,) = [line for line in done.stdout.splitlines() if "is stopped" in line]
    assert warning.endswith("replication from 127.0.0.1 is stopped (SQL thread not running)")
