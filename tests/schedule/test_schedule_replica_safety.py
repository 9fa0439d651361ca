"""Replica safety for every job, on the real primary and replica, with an account that
read_only lets through (govern_admin holds ALL PRIVILEGES, READ_ONLY ADMIN included):
whatever a job is, the sessions it opens on the replica with what govern hands it are
read-only; writes go through the declared [primary]; doctor and plan warn about the
account."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, last_night, worker_table

pytestmark = pytest.mark.server

PY_WRITER = """
import os, sys, pymysql
conn = pymysql.connect(
    read_default_file=os.environ["GOVERN_WORKER_CNF"],
    init_command=os.environ["GOVERN_INIT_COMMAND"],
    autocommit=True,
)
with conn.cursor() as cur:
    cur.execute("INSERT INTO {table} VALUES (2)")
print("python job wrote a row")
"""


def caught_up(server: MariaDB, replica: MariaDB) -> None:
    primary: Any = server.connect()
    with primary.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        position = cur.fetchone()[0]
    primary.close()
    conn: Any = replica.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))
        assert cur.fetchone()[0] == 0
    conn.close()


def rows(server: MariaDB, table: str) -> list[int]:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT a FROM {table} ORDER BY a")
        found = [r[0] for r in cur.fetchall()]
    conn.close()
    return found


@pytest.fixture
def table(server: MariaDB, replica: MariaDB) -> Iterator[str]:
    name = f"app.safety_{uuid.uuid4().hex[:8]}"
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (a INT PRIMARY KEY)")
    caught_up(server, replica)
    yield name
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {name}")
    conn.close()


def test_jobs_on_a_replica_cannot_write_there_even_with_read_only_admin(
    server: MariaDB,
    replica: MariaDB,
    table: str,
    tmp_path: Path,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    replica_cnf = replica.defaults_file("govern_admin")
    # The account is one read_only lets through: a write of its own would go in.
    direct: Any = replica.connect("govern_admin")
    with direct.cursor() as cur:
        cur.execute("SELECT @@read_only")
        assert cur.fetchone()[0] == 1
        cur.execute("START TRANSACTION")
        cur.execute(f"INSERT INTO {table} VALUES (99)")  # accepted: READ_ONLY ADMIN
        cur.execute("ROLLBACK")
    direct.close()
    (tmp_path / "writer.py").write_text(PY_WRITER.format(table=table))
    insert = f"INSERT INTO {table} VALUES"
    path = write_catalog(
        f'[primary]\ndefaults_file = "{server.defaults_file("govern_admin")}"\n'
        + worker_table("replica", replica_cnf)
        + f'[jobs.cli_write]\ncommand = \'mariadb --defaults-file="$GOVERN_WORKER_CNF"'
        f' -e "{insert} (1)"\'\n'
        + f'[jobs.py_write]\ncommand = ["{sys.executable}", "writer.py"]\n'
        + f'[jobs.primary_write]\ncommand = \'mariadb --defaults-file="$GOVERN_PRIMARY_CNF"'
        f' -e "{insert} (3)"\'\n'
        # under `govern run` in session mode, $GOVERN_INIT_COMMAND opts the session out of
        # the slow log and keeps it read-only, in one statement
         + "[jobs.wrapped_write]\nwrap = true\nopts_out = true\n"
        'command = \'mariadb --defaults-file="$GOVERN_WORKER_CNF"'
        ' --init-command="$GOVERN_INIT_COMMAND" --batch'
        f' -e "SELECT @@tx_read_only AS ro, @@log_slow_query AS slow; {insert} (4)"\'\n'
        + '[jobs.ddl]\ncommand = \'mariadb --defaults-file="$GOVERN_WORKER_CNF"'
        f' -e "DROP TABLE {table}"\'\n'
    )
    done = govern("schedule", "run", str(path), "--state", str(state_path))
    assert done.returncode == 1, done.stderr
    night = last_night(state_path)
    jobs = {j["name"]: j for j in night["jobs"]}
    assert jobs["primary_write"]["outcome"] == "ok"
    for name in ("cli_write", "py_write", "ddl"):
        assert jobs[name]["outcome"] == "failed", name
        assert "READ ONLY transaction" in jobs[name]["reason"], (name, jobs[name]["reason"])
    assert jobs["wrapped_write"]["outcome"] == "failed"
    wrapped_log = Path(jobs["wrapped_write"]["attempts"][0]["log"]).read_text()
    assert "ERROR 1792 (25006)" in wrapped_log  # its last line is govern run's own
    assert "ro\tslow\n1\t0" in wrapped_log, wrapped_log  # read-only and out of the slow log
    caught_up(server, replica)
    assert rows(server, table) == [3]
    assert rows(replica, table) == [3]  # the replica did not diverge: the table is still there


def test_doctor_and_plan_warn_about_a_worker_account_that_bypasses_read_only(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    cnf = str(replica.defaults_file("govern_admin"))
    doctor = govern("doctor", "--defaults-file", cnf, "--json")
    assert doctor.returncode in (0, 1), doctor.stderr
    (warning,) = [w for w in json.loads(doctor.stdout)["warnings"] if "READ_ONLY ADMIN" in w]
    assert warning.startswith(
        "this account holds READ_ONLY ADMIN: read_only does not stop its writes, and this"
        " server is a replica."
    )
    # not on the primary: read_only is off there, so the privilege changes nothing
    primary = govern("doctor", "--defaults-file", str(server.defaults_file("govern_admin")))
    assert "READ_ONLY ADMIN" not in primary.stdout
    path = write_catalog(worker_table("replica", Path(cnf)) + '[jobs.a]\ncommand = "true"\n')
    plan = govern("schedule", "plan", str(path), "--state", str(state_path), "--json")
    assert plan.returncode == 0, plan.stderr
    assert f"worker replica: {warning}" in json.loads(plan.stdout)["warnings"]


def test_a_primary_that_is_a_replica_is_refused(
    replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    cnf = replica.defaults_file("govern_admin")
    path = write_catalog(
        f'[primary]\ndefaults_file = "{cnf}"\n'
        + worker_table("replica", cnf)
        + '[jobs.a]\ncommand = "true"\n'
    )
    done = govern("schedule", "run", str(path), "--state", str(state_path))
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "is a replica: jobs write through it, and govern never hands out a replica to write to"
    )
    assert "Traceback" not in done.stderr
