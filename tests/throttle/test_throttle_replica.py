"""The throttler against a real replica that really lags: a load, an upsert and a chunked
delete each hold while the lag is above the bound (or unknown) and go on when it falls,
with every row written exactly once and every hold recorded with its reason."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern.batch import chunked_delete, upsert
from govern.connection import connect as govern_connect
from govern.state import StateStore
from govern.throttle import open_throttler, parse_items
from govern.throttle.record import all_holds
from tests.harness import MariaDB
from tests.throttle.support import (
    GOVERN,
    PT_HEARTBEAT,
    caught_up,
    heartbeat,
    replication_delayed,
    scalar,
    sql_thread_stopped,
    wait_for,
)

pytestmark = pytest.mark.server


@pytest.fixture
def lagging(server: MariaDB, replica: MariaDB) -> Iterator[MariaDB]:
    """The replica, caught up with the primary before the test makes it lag."""
    caught_up(server, replica)
    yield replica


def _table(conn: Any, name: str, rows: int = 0) -> None:
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS app.{name}")
        cur.execute(f"CREATE TABLE app.{name} (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(20))")
        if rows:
            cur.execute(f"INSERT INTO app.{name} SELECT seq, seq % 2, 'x' FROM seq_1_to_{rows}")


def test_load_holds_while_replication_is_stopped_then_writes_every_row_once(
    server: MariaDB, lagging: MariaDB, connect: Any, tmp_path: Path, state_path: Path
) -> None:
    conn = connect("root", database="app")
    _table(conn, "throttled_load")
    caught_up(server, lagging)
    csv = tmp_path / "rows.csv"
    csv.write_text("id,k,v\n" + "".join(f"{i},{i % 7},row{i}\n" for i in range(1, 3001)))
    replica_cnf = lagging.defaults_file("govern_admin")
    with sql_thread_stopped(lagging):
        load = subprocess.Popen(
            [
                *GOVERN,
                "load",
                str(csv),
                "--table",
                "app.throttled_load",
                "--key",
                "id",
                "--throttle",
                "max_lag=1s",
                "--throttle",
                f"replica={replica_cnf}",
                "--throttle",
                "interval=0.2s",
                "--json",
                "--state",
                str(state_path),
                "--defaults-file",
                str(server.defaults_file("govern_admin")),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def hold_recorded() -> bool:
            if not state_path.exists():
                return False
            with StateStore.open(state_path) as store:
                return bool(all_holds(store))

        wait_for(hold_recorded, 60, "a hold in the state file")
        time.sleep(1.0)
        assert scalar(conn, "SELECT COUNT(*) FROM app.throttled_load") == 0  # nothing written
        assert load.poll() is None
    stdout, stderr = load.communicate(timeout=180)
    report = json.loads(stdout)
    assert load.returncode == 0, stderr
    assert report["complete"] and report["written"] == 3000 and report["inserted"] == 3000
    assert report["updated"] == 0  # no batch went in twice
    assert scalar(conn, "SELECT COUNT(*) FROM app.throttled_load") == 3000
    first = report["throttle"]["holds"][0]
    assert first["check"] == "lag" and first["seconds"] >= 1.0
    assert first["reason"].startswith(f"replica lag unknown on 127.0.0.1:{lagging.port}")
    assert "SQL thread stopped" in first["reason"]
    assert "govern: throttle: holding: replica lag unknown" in stderr
    with StateStore.open(state_path) as store:
        stored = all_holds(store)
    assert stored[0]["work"] == f"govern load {csv}" and stored[0]["ended_at"] is not None


def test_upsert_holds_while_a_delayed_replica_lags_and_goes_on_when_it_catches_up(
    server: MariaDB, lagging: MariaDB, connect: Any, admin_settings: Any, state_path: Path
) -> None:
    conn = connect("root", database="app")
    _table(conn, "throttled_upsert", rows=500)  # the first 500 keys exist: they get updated
    caught_up(server, lagging)

    def rows() -> Iterator[dict[str, Any]]:
        for i in range(1, 2001):
            if i % 100 == 0:
                time.sleep(0.25)  # rows come as a job computes them: about 400 rows/s
            yield {"id": i, "k": 7, "v": f"new{i}"}

    spec = parse_items(
        ["max_lag=1s", f"replica={lagging.defaults_file('govern_admin')}", "interval=0.2s"]
    )
    writer_conn = govern_connect(admin_settings)
    with (
        replication_delayed(lagging, 3),
        open_throttler(spec, admin_settings, work="test upsert", state=state_path) as t,
    ):
        result = upsert(writer_conn, "app.throttled_upsert", rows(), key="id", throttle=t)
        holds = list(t.holds)
    writer_conn.close()
    assert (result.inserted, result.updated, result.unchanged) == (1500, 500, 0)
    assert scalar(conn, "SELECT COUNT(*), SUM(k = 7) FROM app.throttled_upsert") == 2000
    lag_holds = [h for h in holds if h.kind == "lag"]
    assert lag_holds, "the delayed replica never held the writes"
    assert all(h.value is not None and h.value > 1 for h in lag_holds)
    assert "(replica status)" in lag_holds[0].reason
    assert result.held_seconds >= sum(h.seconds for h in lag_holds) * 0.9
    caught_up(server, lagging)
    with lagging.connect().cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT COUNT(*), SUM(k = 7) FROM app.throttled_upsert")
        assert cur.fetchone() == (2000, 2000)


@pytest.mark.skipif(PT_HEARTBEAT is None, reason="pt-heartbeat (percona-toolkit) is not installed")
def test_chunked_delete_holds_on_pt_heartbeat_lag_and_deletes_each_row_once(
    server: MariaDB, lagging: MariaDB, connect: Any, admin_settings: Any, state_path: Path
) -> None:
    conn = connect("root", database="app")
    _table(conn, "throttled_purge", rows=40_000)
    with heartbeat(server, lagging) as table:
        caught_up(server, lagging)
        spec = parse_items(
            [
                "max_lag=1s",
                f"replica={lagging.defaults_file('govern_admin')}",
                f"heartbeat_table={table}",
                "interval=0.2s",
            ]
        )
        stopped_at: list[float] = []
        restarted_at: list[float] = []

        def sql_thread(action: str) -> None:
            replica_conn: Any = lagging.connect()
            with replica_conn.cursor() as cur:
                cur.execute(f"{action} SLAVE SQL_THREAD")
            replica_conn.close()

        def release() -> None:
            restarted_at.append(time.time())
            sql_thread("START")

        def progress(walked: int, total: int | None) -> None:
            if walked >= 6000 and not stopped_at:
                sql_thread("STOP")
                stopped_at.append(time.time())
                threading.Timer(3.0, release).start()
                time.sleep(1.5)  # a slow chunk: the heartbeat grows old meanwhile

        delete_conn = govern_connect(admin_settings)
        try:
            with (
                StateStore.open(state_path) as store,
                open_throttler(spec, admin_settings, work="test purge", state=store) as t,
            ):
                result = chunked_delete(
                    delete_conn,
                    "app.throttled_purge",
                    "k = 0",
                    target_seconds=0.02,
                    throttle=t,
                    state=store,
                    progress=progress,
                )
        finally:
            delete_conn.close()
            wait_for(lambda: bool(restarted_at), 10, "the SQL thread restarted")
    # Chunk sizes follow measured chunk times (target 20 ms), so how many there are depends on
    # the machine; what matters is that the walk went on in chunks after the hold.
    assert result.complete and result.rows == 20_000 and result.chunks > 1
    assert scalar(conn, "SELECT COUNT(*) FROM app.throttled_purge WHERE k = 0") == 0
    assert scalar(conn, "SELECT COUNT(*) FROM app.throttled_purge") == 20_000
    holds = [h for h in (result.throttle or {})["holds"] if h["check"] == "lag"]
    assert holds, "the walk never held"
    hold = holds[0]
    assert hold["reason"].endswith(f"> 1.00 s (pt-heartbeat {table})") and hold["value"] > 1
    started = _epoch(hold["started_at"])
    assert stopped_at[0] < started < restarted_at[0]  # held after the stop, before the restart
    assert _epoch(hold["ended_at"]) > restarted_at[0]  # and until replication went on
    assert result.held_seconds >= 1.0


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()
