"""Failing loudly, on the real primary and replica: the sizing read is lag-checked (a replica
whose SQL thread stopped is refused; the read falls back, or the night is refused), a
template making far fewer jobs than on its last nights fails the night, and a worker held
by the lag guard past max_wait is given up (its jobs move, or the night fails)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, last_night, worker_table

pytestmark = pytest.mark.server

NO_HEARTBEAT = 'heartbeat_table = "percona.no_such_heartbeat"\n'


@contextlib.contextmanager
def sql_thread_stopped(server: MariaDB, replica: MariaDB) -> Iterator[None]:
    """The replica stops applying (the issue's night), and is caught up again after."""
    root: Any = replica.connect()
    with root.cursor() as cur:
        cur.execute("STOP SLAVE SQL_THREAD")
    try:
        yield
    finally:
        with root.cursor() as cur:
            cur.execute("START SLAVE SQL_THREAD")
            primary: Any = server.connect()
            with primary.cursor() as pcur:
                pcur.execute("SELECT @@gtid_binlog_pos")
                position = pcur.fetchone()[0]
            primary.close()
            cur.execute("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))
        root.close()


@pytest.fixture
def keys_table(server: MariaDB, replica: MariaDB) -> Iterator[str]:
    """A cache table of keys, created on the primary and replicated (then the test may stop
    the replica's SQL thread and change it on the primary only)."""
    table = f"app.keys_{uuid.uuid4().hex[:8]}"
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (k VARCHAR(32) PRIMARY KEY, n BIGINT)")
        cur.execute("SELECT @@gtid_binlog_pos")
        position = cur.fetchone()[0]
    replica_conn: Any = replica.connect()
    with replica_conn.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))
    replica_conn.close()
    yield table
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
    conn.close()


def fill(server: MariaDB, table: str, keys: list[str]) -> None:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute(f"DELETE FROM {table}")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, 10)", keys)
    conn.close()


def sizing_catalog(table: str, server: MariaDB, replica: MariaDB, extra: str = "") -> str:
    return (
        f'[sizing]\nquery = "SELECT k, n FROM {table}"\nserver = "replica"\n{extra}'
        f'[lag_guard]\nmax_lag = "30s"\n{NO_HEARTBEAT}'
        + worker_table("main", server.defaults_file("govern_admin"))
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + '[each.build]\ncommand = "true"\n'
    )


def run(path: Path, state: Path) -> tuple[int, dict[str, Any], str]:
    done = govern("schedule", "run", str(path), "--state", str(state), "--json")
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_sizing_read_on_a_stopped_replica_falls_back_to_another_worker(
    server: MariaDB,
    replica: MariaDB,
    keys_table: str,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    """The issue's night: tonight's keys are on the primary, the replica stopped applying
    before they came. The read goes to the next worker, which has them: every job runs."""
    path = write_catalog(sizing_catalog(keys_table, server, replica))
    with sql_thread_stopped(server, replica):
        fill(server, keys_table, [f"k{i}" for i in range(6)])
        code, night, stderr = run(path, state_path)
    assert code == 0, stderr
    assert night["status"] == "ok"
    assert sorted(j["name"] for j in night["jobs"]) == [f"build.k{i}" for i in range(6)]
    (refused,) = [w for w in night["summary"]["warnings"] if w.startswith("sizing read refused")]
    assert refused.startswith("sizing read refused on replica (replica lag unknown on replica")
    assert refused.endswith("read from main instead")


def test_a_sizing_read_with_no_fit_server_refuses_the_night(
    server: MariaDB,
    replica: MariaDB,
    keys_table: str,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    """No fallback allowed: no job starts, the night is failed with the reason, exit 1."""
    body = sizing_catalog(keys_table, server, replica, extra="fallback = []\n")
    path = write_catalog(body + '[jobs.totals]\ncommand = "true"\n')
    fill(server, keys_table, ["a", "b"])
    with sql_thread_stopped(server, replica):
        code, night, stderr = run(path, state_path)
    assert code == 1
    assert night["status"] == "failed"
    assert night["note"].startswith("no server is fit for the sizing read")
    assert "replica (replica lag unknown on replica" in night["note"]
    assert f"night {night['id']} of summaries refused: no server is fit" in stderr
    (totals,) = night["jobs"]  # the templates made nothing: no keys were read
    assert totals["outcome"] == "skipped" and totals["attempts"] == []
    assert totals["reason"] == f"the night was refused: {night['note']}"
    assert night["summary"]["refused"] is True


def test_a_template_far_under_its_recent_keys_fails_the_night(
    server: MariaDB,
    replica: MariaDB,
    keys_table: str,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    body = (
        f'[sizing]\nquery = "SELECT k, n FROM {keys_table}"\n'
        + worker_table("main", server.defaults_file("govern_admin"), concurrency=4)
        + '[each.build]\ncommand = "true"\n'
    )
    path = write_catalog(body)
    fill(server, keys_table, [f"k{i}" for i in range(10)])
    for _ in range(2):
        code, night, stderr = run(path, state_path)
        assert code == 0 and night["summary"]["template_keys"] == {"build": 10}, stderr
    last_ran = night["id"]
    fill(server, keys_table, ["k0", "k1", "k2", "k3"])  # 4 < 0.5 x 10
    code, night, stderr = run(path, state_path)
    assert code == 1
    assert night["status"] == "failed" and night["summary"]["refused"] is True
    assert night["note"].startswith(
        "too few sizing keys tonight, the sizing data may be stale: [each.build] made 4 jobs,"
        " under key_floor 0.5 x 10 (its median over the last 2 nights)"
    )
    assert {j["outcome"] for j in night["jobs"]} == {"skipped"} and len(night["jobs"]) == 4
    plan = govern("schedule", "plan", str(path), "--state", str(state_path), "--json")
    assert plan.returncode == 1 and json.loads(plan.stdout)["refusal"] == night["note"]
    # the refused night started nothing: simulate replays the last night that ran
    replay = govern("schedule", "simulate", str(path), "--state", str(state_path), "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout)["night_id"] == last_ran
    # the refused night does not count: the floor still compares with 10, and a DBA who
    # knows the drop is real lowers key_floor for the night
    path.write_text(path.read_text().replace("[sizing]\n", "[sizing]\nkey_floor = 0.3\n"))
    code, night, stderr = run(path, state_path)
    assert code == 0 and night["status"] == "ok", stderr


def test_a_worker_held_past_max_wait_is_given_up_and_its_jobs_move(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """The replica stopped applying for the whole night: after max_wait its lane is given
    up; the job that may run anywhere moves to main, the one only the replica may run is
    skipped with the reason (and its dependent), and the night fails saying why."""
    body = (
        f'[lag_guard]\nmax_lag = "5s"\nmax_wait = "1s"\ncheck_interval = "0.1s"\n{NO_HEARTBEAT}'
        + worker_table("main", server.defaults_file("govern_admin"))
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + '[jobs.only_replica]\ncommand = "true"\nworkers = ["replica"]\n'
        + '[jobs.after]\ncommand = "true"\ndepends_on = ["only_replica"]\n'
        + '[jobs.anywhere]\ncommand = "sleep 0.3"\n'
        + '[jobs.anywhere2]\ncommand = "sleep 0.3"\n'
    )
    path = write_catalog(body)
    with sql_thread_stopped(server, replica):
        done = govern("schedule", "run", str(path), "--state", str(state_path))
    assert done.returncode == 1, done.stderr
    night = last_night(state_path)
    outcomes = {j["name"]: (j["outcome"], j["worker"], j["reason"]) for j in night["jobs"]}
    assert outcomes["anywhere"][:2] == ("ok", "main")
    assert outcomes["anywhere2"][:2] == ("ok", "main")
    reason = outcomes["only_replica"][2]
    assert outcomes["only_replica"][0] == "skipped"
    assert reason.startswith(
        "worker replica was given up: held by the lag guard for more than max_wait 1"
    )
    assert "replication is not running" in reason
    assert outcomes["after"][:1] == ("skipped",)
    assert outcomes["after"][2] == "dependency only_replica did not succeed"
    assert night["status"] == "failed" and night["note"] == reason
    assert f"lag guard replica: {reason}: its jobs move to main" in done.stdout + done.stderr


def test_a_night_whose_only_worker_stays_held_fails_after_max_wait(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    body = (
        f'[lag_guard]\nmax_lag = "5s"\nmax_wait = "1s"\ncheck_interval = "0.1s"\n{NO_HEARTBEAT}'
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n[jobs.b]\ncommand = "true"\n'
    )
    path = write_catalog(body)
    with sql_thread_stopped(server, replica):
        done = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    assert done.returncode == 1, done.stderr
    night = json.loads(done.stdout)
    assert night["status"] == "failed"
    assert {j["outcome"] for j in night["jobs"]} == {"skipped"}
    assert night["note"].startswith("worker replica was given up")
    assert "no worker is left" in done.stderr + done.stdout
