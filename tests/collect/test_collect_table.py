"""``mysql.slow_log`` read over a connection: each row once, the same classes as the file,
never written, the collector's own reads never logged."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern.collect.table import SlowLogTable
from govern.connection import ConnectionSettings
from tests.collect.support import (
    classes,
    follow,
    make_collector,
    merged,
    poll_all,
    prepare,
    workload,
)
from tests.digest.slowlogs import recording
from tests.harness import MariaDB


@contextlib.contextmanager
def logging_to_table(server: MariaDB, name: str) -> Iterator[Path]:
    """Every statement logged to a fresh file and to an emptied mysql.slow_log."""
    admin: Any = server.connect()
    with admin.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("SET SESSION log_slow_query = OFF")
        cur.execute("SET GLOBAL log_output = 'FILE,TABLE'")
        cur.execute("TRUNCATE mysql.slow_log")
    try:
        with recording(server, name) as log:
            yield log
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL log_output = 'FILE'")
        admin.close()


def rows_logged(server: MariaDB) -> int:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION log_slow_query = OFF")
        cur.execute("SELECT COUNT(*) FROM mysql.slow_log")
        (count,) = cur.fetchone()
    conn.close()
    return int(count)


def test_the_table_gives_the_classes_of_the_file(
    server: MariaDB, admin_settings: ConnectionSettings, tmp_path: Path
) -> None:
    app: Any = server.connect(database="app")
    prepare(app)
    with logging_to_table(server, "collect-table") as log:
        conn: Any = server.connect(tcp=True, database="app")
        workload(conn)
        conn.close()
    table_dir, file_dir = tmp_path / "table", tmp_path / "file"
    with make_collector(table_dir, [SlowLogTable(admin_settings)]) as collector:
        poll_all(collector)
        from_table = merged(table_dir / "buckets", collector)
    with make_collector(file_dir, [follow(log, settle=0)]) as collector:
        poll_all(collector)
        from_file = merged(file_dir / "buckets", collector)
    assert from_table["totals"]["events"] == rows_logged(server)
    assert from_table["totals"]["events"] == from_file["totals"]["events"]
    table_classes, file_classes = classes(from_table), classes(from_file)
    assert table_classes.keys() == file_classes.keys()
    for key, figures in file_classes.items():
        count, metrics = figures[0], figures[1]
        assert table_classes[key][0] == count
        for name in ("Query_time", "Lock_time", "Rows_sent", "Rows_examined", "Rows_affected"):
            assert table_classes[key][1][name] == metrics[name], (key, name)
        assert table_classes[key][3]["db"] == figures[3]["db"]
        assert table_classes[key][3]["user"] == figures[3]["user"]


def test_rows_are_read_once_across_polls_even_when_a_long_statement_ends_late(
    server: MariaDB, admin_settings: ConnectionSettings, tmp_path: Path
) -> None:
    app: Any = server.connect(database="app")
    prepare(app)
    with logging_to_table(server, "collect-table-late"):
        slow: Any = server.connect(tcp=True, database="app")
        # Its row is appended when it ends, with a start_time before rows already read.
        sleeper = threading.Thread(target=lambda: slow.cursor().execute("SELECT SLEEP(1.5)"))
        sleeper.start()
        source = SlowLogTable(admin_settings)
        with make_collector(tmp_path, [source], close_after=0) as collector:
            conn: Any = server.connect(tcp=True, database="app")
            events = 0
            for _ in range(4):
                workload(conn, rounds=2)
                events += collector.poll().events
            sleeper.join()
            conn.close()
            slow.close()
            events += sum(report.events for report in poll_all(collector))
            again = collector.poll()
    assert again.events == 0
    assert events == rows_logged(server)
    assert source.rows == events
    late = [key for key in source.recent if key < (source.watermark or "")]
    assert late  # rows near the watermark are remembered, to be told apart when read again


def test_the_collector_never_logs_its_own_reads_and_never_writes(
    server: MariaDB, admin_settings: ConnectionSettings, tmp_path: Path
) -> None:
    with logging_to_table(server, "collect-table-self"):
        with make_collector(tmp_path, [SlowLogTable(admin_settings)]) as collector:
            for _ in range(3):
                collector.poll()
        conn: Any = server.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION log_slow_query = OFF")
            cur.execute(
                "SELECT COUNT(*) FROM mysql.slow_log WHERE sql_text LIKE '%govern:collect%'"
            )
            (own,) = cur.fetchone()
        conn.close()
    assert own == 0


def test_identical_rows_count_as_many_times_as_they_appear() -> None:
    source = SlowLogTable(ConnectionSettings())
    row = ("2026-11-25 10:00:00.123456", "0cc175b9c0f1b6a831c399e269772661", "# …;\n")
    assert len(source._new_entries([row, row])) == 2
    assert source._new_entries([row, row]) == []  # read again: nothing new
    assert len(source._new_entries([row, row, row])) == 1  # a third one appeared


@pytest.mark.parametrize("output", ["FILE", "NONE"])
def test_a_server_that_logs_nothing_to_the_table_is_named_in_a_warning(
    server: MariaDB, tmp_path: Path, output: str
) -> None:
    from tests.collect.support import govern

    admin: Any = server.connect()
    with admin.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"SET GLOBAL log_output = '{output}'")
    result = govern(
        "collect", "--table", "--defaults-file", str(server.defaults_file("govern_admin")),
        "--to", str(tmp_path / "b"), "--state", str(tmp_path / "s.db"), "--once",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (
        f"--table: log_output={output}: the server writes nothing to mysql.slow_log"
        in result.stderr
    )


def test_an_account_that_may_not_read_the_table_gets_one_line_and_exit_3(
    server: MariaDB, tmp_path: Path
) -> None:
    from tests.collect.support import govern

    result = govern(
        "collect", "--table", "--defaults-file", str(server.defaults_file("govern_app")),
        "--to", str(tmp_path / "b"), "--state", str(tmp_path / "s.db"), "--once",
    )  # fmt: skip
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "govern: error: --table: cannot read mysql.slow_log: SELECT command denied"
    )
