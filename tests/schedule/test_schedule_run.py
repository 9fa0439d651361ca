"""Nights on the real MariaDB (and its replica): order and lanes per policy, dependencies,
failure and retry, timeouts, read-only SQL on replicas, the run lock, secrets, history."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern.schedulers.catalog import load_catalog
from govern.schedulers.night import run_night
from govern.schedulers.workers import LockHeld, lock_name
from govern.state import StateStore
from tests.harness import MariaDB
from tests.paths import REPO
from tests.schedule.support import (
    WriteCatalog,
    gone,
    govern,
    last_night,
    start_order,
    wait_until,
    worker_table,
)

pytestmark = pytest.mark.server


@pytest.fixture
def counts(server: MariaDB, connect: Any) -> Iterator[str]:
    """A fresh cache table of row counts on the primary: ``app.counts_XXXX (type, approx_rows)``."""
    table = f"app.counts_{uuid.uuid4().hex[:8]}"
    conn = connect("govern_admin")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (type VARCHAR(64) PRIMARY KEY, approx_rows BIGINT)")
    yield table
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")


def fill(connect: Any, table: str, rows: dict[str, int]) -> None:
    conn = connect("govern_admin")
    with conn.cursor() as cur:
        cur.executemany(f"REPLACE INTO {table} VALUES (%s, %s)", list(rows.items()))


def night(path: Path, state: Path, **kwargs: Any) -> dict[str, Any]:
    with StateStore.open(state) as store:
        return run_night(
            load_catalog(path), store, show_progress=False, notify=lambda m: None, **kwargs
        )


SIZES = {"tiny": 10, "small": 200, "medium": 3000, "large": 40000}


@pytest.mark.parametrize(
    ("policy", "weights", "expected"),
    [
        ("sjf", {}, ["tiny", "small", "medium", "large"]),
        ("ljf", {}, ["large", "medium", "small", "tiny"]),
        ("fifo", {}, ["medium", "tiny", "large", "small"]),
        # Smith's rule: 3000/100 = 30 beats 200/1 = 200 and 40000/1
        ("wspt", {"medium": 100}, ["tiny", "medium", "small", "large"]),
    ],
)
def test_order_per_policy_on_one_worker(
    server: MariaDB,
    connect: Any,
    counts: str,
    state_path: Path,
    policy: str,
    weights: dict[str, int],
    expected: list[str],
    write_catalog: WriteCatalog,
) -> None:
    fill(connect, counts, SIZES)
    jobs = "".join(
        f'[jobs.{name}]\ncommand = "true"\nweight = {weights.get(name, 1)}\n'
        for name in ["medium", "tiny", "large", "small"]
    )
    path = write_catalog(
        f'policy = "{policy}"\n[sizing]\nquery = "SELECT type, approx_rows FROM {counts}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + jobs,
    )
    result = night(path, state_path)
    assert result["status"] == "ok"
    assert start_order(result) == expected
    assert {j["rows"] for j in result["jobs"]} == set(SIZES.values())
    planned = sorted(
        result["jobs"], key=lambda j: (j["planned"]["start_s"], j["planned"]["finish_s"])
    )
    assert [j["name"] for j in planned] == expected  # the plan predicted the same order


def test_two_ended_on_primary_and_replica(
    server: MariaDB,
    replica: MariaDB,
    connect: Any,
    counts: str,
    tmp_path: Path,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    fill(connect, counts, {"a": 1000, "b": 2000, "c": 3000, "d": 4000})
    out = tmp_path / "where"
    out.mkdir()
    job = (
        "command = \"mysql --defaults-file=$GOVERN_WORKER_CNF -N -e 'SELECT @@server_id' "
        '> where/$GOVERN_JOB; sleep 0.2"\n'
    )
    path = write_catalog(
        f'policy = "two-ended"\n[sizing]\nquery = "SELECT type, approx_rows FROM {counts}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + "".join(f"[jobs.{n}]\n{job}" for n in "abcd"),
    )
    result = night(path, state_path)
    assert result["status"] == "ok"
    by_name = {j["name"]: j for j in result["jobs"]}
    first = {j["lane"]: j["name"] for j in result["jobs"] if j["start_s"] < 0.15}
    assert first == {"main#0": "a", "replica#0": "d"}  # shortest on one end, longest on the other
    for name, j in by_name.items():
        server_id = (out / name).read_text().strip()
        assert server_id == ("1" if j["worker"] == "main" else "2")
    workers = {w["name"]: w for w in result["workers"]}
    assert workers["replica"]["is_replica"] is True and workers["main"]["is_replica"] is False


def test_dependencies_failure_retry_and_skips(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"), concurrency=2)
        + """
[defaults]
retry_delay = "0s"

[jobs.flaky]
command = "if [ -e flaky.done ]; then echo fine; else touch flaky.done; echo 'first try fails' >&2; exit 4; fi"
retries = 2

[jobs.after_flaky]
command = "true"
depends_on = ["flaky"]

[jobs.broken]
command = "echo 'ERROR 1146: no such table'; exit 7"
retries = 1

[jobs.needs_broken]
command = "touch should-not-exist"
depends_on = ["broken"]

[jobs.needs_needs_broken]
command = "true"
depends_on = ["needs_broken"]

[jobs.independent]
command = "sleep 0.2"
""",
    )
    result = night(path, state_path)
    jobs = {j["name"]: j for j in result["jobs"]}
    assert result["status"] == "failed"
    assert jobs["flaky"]["outcome"] == "ok" and len(jobs["flaky"]["attempts"]) == 2
    assert [a["outcome"] for a in jobs["flaky"]["attempts"]] == ["failed", "ok"]
    assert jobs["flaky"]["attempts"][0]["exit_code"] == 4
    assert jobs["after_flaky"]["outcome"] == "ok"
    assert jobs["after_flaky"]["start_s"] >= jobs["flaky"]["finish_s"]
    assert jobs["broken"]["outcome"] == "failed" and len(jobs["broken"]["attempts"]) == 2
    assert jobs["broken"]["reason"] == "exit 7: ERROR 1146: no such table"
    assert jobs["needs_broken"]["outcome"] == "skipped"
    assert jobs["needs_broken"]["reason"] == "dependency broken did not succeed"
    assert jobs["needs_needs_broken"]["outcome"] == "skipped"
    assert not (tmp_path / "should-not-exist").exists()
    assert jobs["independent"]["outcome"] == "ok"  # a failure does not stop the others
    assert result["summary"]["outcomes"] == {"ok": 3, "failed": 1, "skipped": 2}
    assert result["summary"]["done_at_half_makespan"] <= 0.5
    log = Path(jobs["broken"]["attempts"][0]["log"])
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "no such table" in log.read_text()


def test_timeouts_term_then_kill(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        'kill_grace = "0.5s"\n'
        + worker_table("main", server.defaults_file("govern_admin"), concurrency=3)
        + """
[jobs.slow]
command = "echo $$ > slow.pid; exec sleep 30"
timeout = "0.5s"

[jobs.stubborn]
command = "trap '' TERM; echo $$ > stubborn.pid; while true; do sleep 0.1; done"
timeout = "0.5s"

[jobs.slow_sql]
sql = "slow.sql"
timeout = "1s"
""",
    )
    (tmp_path / "slow.sql").write_text("SELECT SLEEP(30) AS govern_test_slow_sql;\n")
    started = time.monotonic()
    result = night(path, state_path)
    assert time.monotonic() - started < 6
    jobs = {j["name"]: j for j in result["jobs"]}
    for name in ("slow", "stubborn", "slow_sql"):
        assert jobs[name]["outcome"] == "timeout", jobs[name]
    assert jobs["slow"]["reason"] == "timed out after 0.5s"
    assert jobs["slow"]["actual_s"] < 2
    assert 0.9 < jobs["stubborn"]["actual_s"] < 3  # TERM ignored: KILL after kill_grace
    for name in ("slow", "stubborn"):
        assert gone(int((tmp_path / f"{name}.pid").read_text()), 2)
    # the statement itself is stopped on the server too (max_statement_time = timeout + grace),
    # not left running after its client was killed
    conn = connect("govern_admin")
    still_running = 1
    while still_running and time.monotonic() - started < 5:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                " WHERE INFO LIKE '%govern_test_slow_sql%' AND ID <> CONNECTION_ID()"
            )
            still_running = cur.fetchone()[0]
        time.sleep(0.1)
    assert still_running == 0


def test_sql_jobs_never_write_to_a_replica(
    server: MariaDB,
    replica: MariaDB,
    connect: Any,
    tmp_path: Path,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    table = f"app.summary_{uuid.uuid4().hex[:8]}"
    with connect("govern_admin").cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (n INT)")
    (tmp_path / "write.sql").write_text(f"INSERT INTO {table} VALUES (1);\n")
    (tmp_path / "read.sql").write_text(f"SELECT COUNT(*) FROM {table};\n")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the table must exist on the replica first
        with replica.connect().cursor() as cur:  # type: ignore[attr-defined]
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='app' AND TABLE_NAME=%s",
                (table.split(".")[1],),
            )
            if cur.fetchone()[0]:
                break
        time.sleep(0.1)
    path = write_catalog(
        worker_table("replica", replica.defaults_file("govern_admin"))
        + worker_table("main", server.defaults_file("govern_admin"))
        + """
[jobs.write_on_replica]
sql = "write.sql"
workers = ["replica"]

[jobs.read_on_replica]
sql = "read.sql"
workers = ["replica"]

[jobs.write_on_primary]
sql = "write.sql"
workers = ["main"]
""",
    )
    result = night(path, state_path)
    jobs = {j["name"]: j for j in result["jobs"]}
    assert jobs["write_on_replica"]["outcome"] == "failed"
    assert "READ ONLY transaction" in jobs["write_on_replica"]["reason"]
    assert jobs["read_on_replica"]["outcome"] == "ok"
    assert jobs["write_on_primary"]["outcome"] == "ok"
    replica_conn: Any = replica.connect()

    def replica_rows() -> int:
        with replica_conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {table}")
            return int(cur.fetchone()[0])

    wait_until(lambda: replica_rows() >= 1, timeout=60)  # the primary's row replicated...
    assert replica_rows() == 1  # ...and nothing of our own
    replica_conn.close()


def test_the_run_lock_refuses_a_second_night(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        'name = "locked"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "touch ran"\n',
    )
    holder = connect("govern_admin")
    with holder.cursor() as cur:
        cur.execute("SELECT GET_LOCK(%s, 0), CONNECTION_ID()", (lock_name("locked"),))
        got, holder_id = cur.fetchone()
    assert got == 1
    with pytest.raises(LockHeld, match=f"held by connection {holder_id}"):
        night(path, state_path)
    proc = govern("schedule", "run", str(path), "--state", str(state_path))
    assert proc.returncode == 3 and "another night of 'locked' is running" in proc.stderr
    assert not (tmp_path / "ran").exists()
    server.hang_up(holder)  # its lock ends with it
    assert night(path, state_path)["status"] == "ok"


def test_nothing_govern_does_is_binlogged_and_plan_changes_nothing(
    server: MariaDB, connect: Any, counts: str, state_path: Path, write_catalog: WriteCatalog
) -> None:
    fill(connect, counts, {"a": 5})
    path = write_catalog(
        f'[sizing]\nquery = "SELECT type, approx_rows FROM {counts}"\n[lag_guard]\nmax_lag = "5s"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n',
    )
    admin = connect("govern_admin")

    def position() -> tuple[Any, ...]:
        with admin.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            return tuple(cur.fetchone()[:2])

    before = position()
    plan = govern("schedule", "plan", str(path), "--state", str(state_path), "--json", check=True)
    assert json.loads(plan.stdout)["jobs"][0]["rows"] == 5
    with StateStore.open(state_path) as store:
        assert store.db.execute("SELECT COUNT(*) FROM schedule_nights").fetchone()[0] == 0
    assert night(path, state_path)["status"] == "ok"
    assert position() == before


def test_a_write_in_the_sizing_query_is_refused(
    server: MariaDB,
    connect: Any,
    counts: str,
    tmp_path: Path,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    fill(connect, counts, {"a": 5})
    path = write_catalog(
        f'[sizing]\nquery = "DELETE FROM {counts}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "touch ran"\n',
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"govern: error: {path}:2: the sizing query must be one SELECT, WITH or SHOW statement,"
        " not DELETE"
    )
    with connect("govern_admin").cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {counts}")
        assert cur.fetchone()[0] == 1
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("DROP TABLE {victim}", "not DROP"),
        ("SET GLOBAL max_connections = 1", "not SET"),
        ("/*!50000 DROP TABLE {victim} */", "not DROP"),
        ("SELECT 'a', 1; DROP TABLE {victim}", "2 statements"),
        ("SELECT 'a', 1 INTO OUTFILE '/tmp/govern-sizing-{victim}'", "INTO OUTFILE"),
    ],
)
def test_the_sizing_query_must_be_one_read(
    server: MariaDB,
    connect: Any,
    tmp_path: Path,
    state_path: Path,
    query: str,
    why: str,
    write_catalog: WriteCatalog,
) -> None:
    """Refused before it is sent: DDL would commit the read-only transaction (and be binlogged),
    SET GLOBAL needs no transaction at all."""
    victim = f"app.victim_{uuid.uuid4().hex[:8]}"
    root = connect()
    with root.cursor() as cur:
        cur.execute(f"CREATE TABLE {victim} (n INT)")
        cur.execute("SELECT @@GLOBAL.max_connections")
        (connections,) = cur.fetchone()
        cur.execute("SHOW MASTER STATUS")
        binlog = cur.fetchone()[:2]
    path = write_catalog(
        f'[sizing]\nquery = "{query.format(victim=victim)}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "touch ran"\n',
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"govern: error: {path}:2: the sizing query must be one SELECT, WITH"
                           " or SHOW statement")  # fmt: skip
    assert why in line
    with root.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {victim}")  # still there
        cur.execute("SELECT @@GLOBAL.max_connections")
        assert cur.fetchone()[0] == connections
        cur.execute("SHOW MASTER STATUS")
        assert cur.fetchone()[:2] == binlog
        cur.execute(f"DROP TABLE {victim}")
    assert not (tmp_path / "ran").exists()


def test_reads_of_every_shape_are_accepted(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    for query in (
        "WITH c AS (SELECT 'a' AS k, 3 AS n) SELECT k, n FROM c",
        "(SELECT 'a', 3)",
        "  -- the counts\n SELECT 'a', 3; ",
        "SELECT 'a;b', 3 FROM DUAL WHERE 1 = 0 UNION ALL SELECT 'a', 3",
        "SHOW GLOBAL STATUS LIKE 'Uptime'",
    ):
        path = write_catalog(
            f'[sizing]\nquery = """{query}"""\n'
            + worker_table("main", server.defaults_file("govern_admin"))
            + '[jobs.a]\ncommand = "true"\n',
        )
        proc = govern("schedule", "plan", str(path), "--state", str(state_path), "--json")
        assert proc.returncode == 0, (query, proc.stderr)


def test_absurd_row_counts_are_clamped_with_a_warning(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """BIGINT UNSIGNED's max from the cache table, int64's max in the catalog: each job runs,
    with its size clamped and a warning per row; the night is not lost."""
    path = write_catalog(
        "[sizing]\nquery = \"SELECT 'a', 18446744073709551615 UNION ALL SELECT 'b', 5\"\n"
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n[jobs.b]\ncommand = "true"\n'
        + '[jobs.c]\ncommand = "true"\nrows = 9223372036854775807\n',
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    assert proc.returncode == 0, proc.stderr
    night = json.loads(proc.stdout)
    rows = {j["name"]: j["rows"] for j in night["jobs"]}
    assert rows == {"a": 10**15, "b": 5, "c": 10**15}
    assert {j["outcome"] for j in night["jobs"]} == {"ok"}
    assert (
        "job a: 18446744073709551615 rows is more than any table holds: counted as"
        " 1,000,000,000,000,000"
    ) in proc.stderr
    assert "job c: 9223372036854775807 rows is more than any table holds" in proc.stderr


def test_sizes_nothing_dropped_silently(
    server: MariaDB, connect: Any, counts: str, state_path: Path, write_catalog: WriteCatalog
) -> None:
    fill(connect, counts, {"a": 5, "orphan": 7, "other_orphan": 9})
    with connect("govern_admin").cursor() as cur:
        cur.execute(f"CREATE TABLE {counts}_t (x INT)")
        cur.execute(f"INSERT INTO {counts}_t VALUES (1), (2), (3)")
        cur.execute(f"ANALYZE TABLE {counts}_t")
    path = write_catalog(
        f'[sizing]\nquery = "SELECT type, approx_rows FROM {counts} UNION ALL SELECT NULL, 3"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n'
        + '[jobs.nosize]\ncommand = "true"\nkey = "missing_key"\n'
        + '[jobs.quiet]\ncommand = "true"\n'
        + f'[jobs.fromtable]\ncommand = "true"\nrows_from_table = "{counts}_t"\n'
        + '[jobs.fixed]\ncommand = "true"\nrows = 42\n',
    )
    proc = govern("schedule", "plan", str(path), "--state", str(state_path), "--json", check=True)
    plan = json.loads(proc.stdout)
    rows = {j["name"]: j["rows"] for j in plan["jobs"]}
    assert rows == {"a": 5, "nosize": None, "quiet": None, "fromtable": 3, "fixed": 42}
    assert plan["sizes"]["unsized"] == ["nosize", "quiet"]
    assert plan["sizes"]["unclaimed_keys"] == ["orphan", "other_orphan"]
    assert plan["sizes"]["bad_rows"] == 1
    assert "2 keys of the sizing query match no job: orphan, other_orphan" in plan["warnings"]
    # a job sized by its name only (quiet) may well be absent from the cache table
    assert "1 job has no row count: nosize" in plan["warnings"]
    with connect("govern_admin").cursor() as cur:
        cur.execute(f"DROP TABLE {counts}_t")


def test_unreachable_worker_is_left_out(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    dead = tmp_path / "dead.cnf"
    dead.write_text("[client]\nhost=127.0.0.1\nport=1\nuser=nobody\n")
    dead.chmod(0o600)
    path = write_catalog(
        worker_table("dead", dead)
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n[jobs.b]\ncommand = "true"\n',
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert {j["worker"] for j in result["jobs"]} == {"main"}
    assert (
        "govern: warning: worker dead is left out: cannot connect to nobody@127.0.0.1:1"
        in proc.stderr
    )
    only_dead = write_catalog(
        worker_table("dead", dead) + '[jobs.a]\ncommand = "true"\n', "dead.toml"
    )
    proc = govern("schedule", "run", str(only_dead), "--state", str(state_path))
    assert proc.returncode == 3
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("govern: error: no worker of 'dead' can be reached")
    )


def test_jobs_get_connections_without_secrets_in_argv_logs_or_state(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    cnf = server.defaults_file("govern_admin")
    password = server.passwords["govern_admin"]
    path = write_catalog(
        worker_table("main", cnf)
        + """
[jobs.spy]
command = "env | grep ^GOVERN_ | sort > env.txt; stat -c %a $GOVERN_WORKER_CNF $(dirname $GOVERN_WORKER_CNF) > mode.txt; cat /proc/$$/cmdline | tr '\\\\0' ' ' > argv.txt; mysql --defaults-file=$GOVERN_WORKER_CNF -N -e 'SELECT CURRENT_USER()' > who.txt"
""",
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path))
    assert proc.returncode == 0, proc.stderr
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines())
    assert env["GOVERN_JOB"] == "spy" and env["GOVERN_WORKER"] == "main"
    assert (
        env["GOVERN_WORKER_PORT"] == str(server.port)
        and env["GOVERN_WORKER_USER"] == "govern_admin"
    )
    assert env["GOVERN_ATTEMPT"] == "1" and env["GOVERN_NIGHT_ID"] == str(
        last_night(state_path)["id"]
    )
    assert (tmp_path / "mode.txt").read_text().split() == ["600", "700"]
    assert (tmp_path / "who.txt").read_text().strip() == "govern_admin@127.0.0.1"
    cnf_path = Path(env["GOVERN_WORKER_CNF"])
    assert cnf_path.parent.parent == state_path.parent / "schedule-run"  # private, not /tmp
    assert not cnf_path.parent.exists()  # deleted after the night
    for text in (
        (tmp_path / "env.txt").read_text(),
        (tmp_path / "argv.txt").read_text(),
        proc.stdout + proc.stderr,
        state_path.read_bytes().decode("latin-1"),
        *(p.read_text() for p in state_path.parent.rglob("*.log")),
    ):
        assert password not in text


def test_estimates_learn_from_history_and_report_their_error(
    server: MariaDB, connect: Any, counts: str, state_path: Path, write_catalog: WriteCatalog
) -> None:
    fill(connect, counts, {"a": 100, "b": 200})
    path = write_catalog(
        f'[sizing]\nquery = "SELECT type, approx_rows FROM {counts}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "sleep 0.2"\n[jobs.b]\ncommand = "sleep 0.4"\n',
    )
    first = night(path, state_path)
    assert {j["estimate_method"] for j in first["jobs"]} == {"default-rate"}
    second = night(path, state_path)
    jobs = {j["name"]: j for j in second["jobs"]}
    assert jobs["a"]["estimate_method"] == "rate" and jobs["b"]["estimate_method"] == "rate"
    assert jobs["a"]["estimate_s"] == pytest.approx(first["jobs"][0]["actual_s"], rel=0.01)
    error = second["summary"]["estimate_error"]
    assert error["jobs"] == 2 and error["weighted_abs_pct"] < 50
    plan = json.loads(
        govern(
            "schedule", "plan", str(path), "--state", str(state_path), "--json", check=True
        ).stdout
    )
    assert all(j["estimate_method"] == "rate" and j["estimate_samples"] == 2 for j in plan["jobs"])


def test_a_template_makes_tonights_jobs_from_the_cache_table(
    server: MariaDB,
    connect: Any,
    counts: str,
    tmp_path: Path,
    state_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    fill(connect, counts, {"click": 500, "view": 9000, "buy": 20, "odd key": 1})
    path = write_catalog(
        f'[sizing]\nquery = "SELECT type, approx_rows FROM {counts}"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + """
[each.summary]
command = "echo {key} $GOVERN_JOB_KEY $GOVERN_JOB_ROWS >> made.txt"

[jobs.report]
command = "true"
depends_on = ["summary"]
""",
    )
    result = night(path, state_path)
    assert result["status"] == "ok"
    assert start_order(result) == ["summary.buy", "summary.click", "summary.view", "report"]
    assert (tmp_path / "made.txt").read_text().splitlines() == [
        "buy buy 20",
        "click click 500",
        "view view 9000",
    ]
    assert {j["name"]: j["key"] for j in result["jobs"]}["summary.view"] == "view"
    warnings = result["summary"]["warnings"]
    assert "1 keys made no job: 'odd key' (not a safe job name)" in warnings


def test_two_workers_on_one_server_share_the_run_lock(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    cnf = server.defaults_file("govern_admin")
    socket_cnf = server.defaults_file("govern_admin", tcp=False)
    path = write_catalog(
        worker_table("tcp", cnf)
        + worker_table("socket", socket_cnf)
        + '[jobs.a]\ncommand = "sleep 0.2"\n[jobs.b]\ncommand = "sleep 0.2"\n',
    )
    result = night(path, state_path)
    assert result["status"] == "ok"
    assert {j["worker"] for j in result["jobs"]} == {"tcp", "socket"}


EXAMPLE = REPO / "examples" / "nightly"


class _OtherClient(threading.Thread):
    """Another application meanwhile: new connections, each with one slow statement."""

    def __init__(self, server: MariaDB) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.markers: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            text = f"other-client-{uuid.uuid4().hex[:12]}"
            conn: Any = self.server.connect("govern_app")
            with conn.cursor() as cur:
                cur.execute(f"SELECT SLEEP(0.25), '{text}'")
            conn.close()
            self.markers.append(text)


def test_the_nightly_example_runs(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path
) -> None:
    """examples/nightly end to end on one server (primary and worker): load a small day
    of Zipf-distributed events, then build its summaries and totals. The summaries run
    under `govern run` in session mode: another client's slow statements stay logged."""
    cnf = server.defaults_file("govern_admin")
    with connect().cursor() as cur:
        cur.execute("SET GLOBAL log_slow_query = ON")
        cur.execute("SET GLOBAL long_query_time = 0.2")
    load = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE / "load.py"),
            "--defaults-file",
            str(cnf),
            "--rows",
            "20000",
            "--types",
            "12",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "loaded 20,000 events of 12 types" in load.stdout
    text = (EXAMPLE / "summaries.toml").read_text()
    text = text.replace('"primary.cnf"', f'"{cnf}"').replace('"replica1.cnf"', f'"{cnf}"')
    text = text.replace('"replica2.cnf"', f'"{cnf}"')
    text = text.replace('"./job.sh"', f'"{EXAMPLE / "job.sh"}"').replace(
        '"./totals.sh"', f'"{EXAMPLE / "totals.sh"}"'
    )
    path = tmp_path / "summaries.toml"
    path.write_text(text)
    other = _OtherClient(server)
    other.start()
    try:
        result = night(path, state_path)
    finally:
        other.done.set()
        other.join()
    assert result["status"] == "ok", [j["reason"] for j in result["jobs"] if j["outcome"] != "ok"]
    time.sleep(0.3)  # a log entry can land just after the client has its result
    log = server.slow_log.read_text(errors="replace")
    unlogged = [m for m in other.markers if m not in log]
    assert len(other.markers) >= 5 and unlogged == [], f"{len(unlogged)} of {len(other.markers)}"
    job_logs = sorted((state_path.parent / "schedule-logs").rglob("summary.*.log"))
    assert len(job_logs) == 12
    assert all("session mode" in p.read_text() for p in job_logs)
    assert len(result["jobs"]) == 13 and result["jobs"][-1]["name"] == "daily_totals"
    sizes = {j["key"]: j["rows"] for j in result["jobs"] if j["name"].startswith("summary.")}
    assert sum(sizes.values()) == 20000
    with connect("govern_admin").cursor() as cur:
        cur.execute(
            "SELECT t.type, t.events FROM nightly.daily_totals t"
            " WHERE t.day = CURDATE() - INTERVAL 1 DAY"
        )
        totals = {kind: int(n) for kind, n in cur.fetchall()}
    assert totals == sizes  # every event summarised once, per type


def test_an_account_that_cannot_see_replica_status_is_treated_as_on_a_replica(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    table = f"app.unsure_{uuid.uuid4().hex[:8]}"
    (tmp_path / "write.sql").write_text(f"CREATE TABLE {table} (n INT);\n")
    path = write_catalog(
        "[lag_guard]\nmax_lag = '10s'\n"
        + worker_table("app", server.defaults_file("govern_app"))
        + '[jobs.write]\nsql = "write.sql"\n',
    )
    result = night(path, state_path)
    job = result["jobs"][0]
    assert job["outcome"] == "failed" and "READ ONLY transaction" in job["reason"]
    assert (
        "worker app: cannot read replica status (needs SLAVE MONITOR or REPLICA MONITOR or SUPER):"
        " the lag guard cannot see it and its sql jobs run read-only"
    ) in result["summary"]["warnings"]


def test_a_wrapped_sql_job_runs_in_session_mode(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """A wrapped sql job's session opts out by itself: nothing global changes."""
    text = f"wrapped-sql-{uuid.uuid4().hex[:12]}"
    (tmp_path / "read.sql").write_text(f"SELECT SLEEP(0.1), '{text}';\n")
    path = write_catalog(
        worker_table("w", server.defaults_file("govern_admin"))
        + '[jobs.read]\nsql = "read.sql"\nwrap = true\n',
    )
    with connect().cursor() as cur:
        cur.execute("SET GLOBAL log_slow_query = ON")
        cur.execute("SET GLOBAL long_query_time = 0")
    result = night(path, state_path)
    assert result["status"] == "ok", result["jobs"][0]["reason"]
    (job_log,) = (state_path.parent / "schedule-logs").rglob("read.1.log")
    assert "session mode (the job opts its sessions out" in job_log.read_text()
    time.sleep(0.3)
    assert text not in server.slow_log.read_text(errors="replace")
