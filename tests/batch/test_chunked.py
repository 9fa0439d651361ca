"""Chunked UPDATE and DELETE against the real MariaDB: every row once over composite and
string keys, resume after a SIGKILL, one run of a change at a time, and the refusals."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from govern.batch import chunked_delete, chunked_update
from govern.batch.chunk_sql import parse_statement
from govern.cli import cli
from govern.errors import UsageError
from govern.state import StateStore
from tests.harness import MariaDB

pytestmark = pytest.mark.server


def fill(conn: Any, rows: int) -> None:
    """``app.walk``: a composite key of a number and a case-insensitive string."""
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.walk")
        cur.execute(
            "CREATE TABLE app.walk (g INT NOT NULL, name VARCHAR(20) NOT NULL, n INT NOT NULL,"
            " PRIMARY KEY (g, name)) COLLATE utf8mb4_general_ci"
        )
        cur.execute(
            "INSERT INTO app.walk SELECT seq % 7, CONCAT(IF(seq % 2, 'a', 'B'), seq), 0"
            f" FROM app.seq_1_to_{rows}"
        )


def counts(conn: Any) -> tuple[int, int, int]:
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*), SUM(n = 1), SUM(n > 1) FROM app.walk")
        total, once, more = cur.fetchone()
        return int(total), int(once or 0), int(more or 0)


def test_chunked_update_changes_every_row_exactly_once_over_a_composite_string_key(
    connect: Any,
) -> None:
    conn = connect("root")
    fill(conn, 5000)
    result = chunked_update(conn, "app.walk", "n = n + 1", target_seconds=0.001)
    assert result.complete and result.chunks > 3
    assert result.rows == result.scanned == 5000
    assert counts(conn) == (5000, 5000, 0)
    deleted = chunked_delete(conn, "app.walk", "name LIKE %s AND g < %s", ("b%", 3))
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM app.walk WHERE name LIKE 'b%' AND g < 3")
        assert cur.fetchone()[0] == 0
    assert deleted.rows == sum(1 for i in range(1, 5001) if i % 2 == 0 and i % 7 < 3)


def _walk(state: Path) -> dict[str, Any] | None:
    """The state file's one walk, read as another process would (None until it exists)."""
    if not state.exists():
        return None
    db = sqlite3.connect(state)
    db.row_factory = sqlite3.Row
    try:
        row = db.execute("SELECT * FROM chunk_walks").fetchone()
    except sqlite3.OperationalError:  # the file is not migrated yet
        row = None
    db.close()
    return dict(row) if row else None


def _open_holds(state: Path) -> int:
    with StateStore.open(state) as store:
        return int(
            store.db.execute(
                "SELECT COUNT(*) FROM throttle_holds WHERE ended_at IS NULL"
            ).fetchone()[0]
        )


def test_a_killed_walk_goes_on_from_its_last_committed_chunk(
    server: MariaDB, connect: Any, tmp_path: Path, state_path: Path
) -> None:
    conn = connect("root")
    fill(conn, 20_000)
    flag = tmp_path / "hold"
    # A row lock in the walk's way keeps it from ending before the flag is down: a free walk
    # of 20,000 rows takes well under a second, less than a loaded test runner may sleep.
    # The locked row is the 1,501st key: past the first chunk (always 1,000 keys) and the
    # record after it (which the first chunk's range scan may lock), and near enough for
    # a walk whose chunks shrank to a few rows on a loaded server to reach it soon. The lock
    # is released once the walk holds, or once it waits on the lock after the flag is down.
    with conn.cursor() as cur:
        cur.execute("SELECT g, name FROM app.walk ORDER BY g, name LIMIT 1 OFFSET 1500")
        key = cur.fetchone()
    blocker = connect("root")
    blocker.begin()
    with blocker.cursor() as cur:
        cur.execute("SELECT n FROM app.walk WHERE g = %s AND name = %s FOR UPDATE", key)
    cnf = str(server.defaults_file("govern_admin"))
    statement = "UPDATE app.walk SET n = n + 1"
    command = [
        sys.executable,
        "-m",
        "govern",
        "chunk",
        statement,
        "--defaults-file",
        cnf,
        "--state",
        str(state_path),
        "--target-time",
        "0.005s",
        "--json",
    ]
    first = subprocess.Popen(
        [*command, "--throttle", f"flag_file={flag}", "--throttle", "interval=0.02s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while (walk := _walk(state_path)) is None or walk["chunks"] < 1:
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.01)
    flag.write_text("")  # it holds between two chunks...
    locked, seen, since = True, None, time.monotonic()
    while _open_holds(state_path) == 0:
        assert time.monotonic() < deadline and first.poll() is None, _walk(state_path)
        walk = _walk(state_path)
        now = (walk["chunks"], walk["in_flight"]) if walk else None
        if now != seen:
            seen, since = now, time.monotonic()
        elif locked and now and now[1] is not None and time.monotonic() - since > 0.3:
            # one chunk in flight for 0.3 s: it waits on the row lock. Its last poll is
            # older than the flag: once the chunk commits, the next pause reads the flag.
            blocker.rollback()
            locked = False
        time.sleep(0.02)
    if locked:
        blocker.rollback()
    second = CliRunner().invoke(cli, [*command[3:]])  # ...and one run at a time
    assert second.exit_code == 3
    assert "this change is already running" in second.output
    os.kill(first.pid, signal.SIGKILL)  # ...and dies there
    first.communicate()
    walk = _walk(state_path)
    assert walk is not None and walk["state"] == "running" and walk["in_flight"] is None
    done = walk["rows"]
    assert 0 < done < 20_000 and counts(conn) == (20_000, done, 0)
    flag.unlink()
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["resumed"] and report["complete"] and report["rows"] == 20_000
    assert "resuming an unfinished run of this change after key" in again.stderr
    assert counts(conn) == (20_000, 20_000, 0)  # every row exactly once
    fresh = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert json.loads(fresh.stdout)["resumed"] is False  # a finished change starts anew
    assert counts(conn) == (20_000, 0, 20_000)


def test_a_refused_chunk_keeps_the_earlier_ones_and_names_its_keys(
    server: MariaDB, connect: Any, state_path: Path
) -> None:
    conn = connect("root")
    fill(conn, 3000)
    result = CliRunner().invoke(
        cli,
        [
            "chunk",
            "UPDATE app.walk SET n = IF(g = 3, NULL, n + 1)",
            "--target-time",
            "0.002s",
            "--defaults-file",
            str(server.defaults_file("govern_admin")),
            "--state",
            str(state_path),
        ],
    )
    assert result.exit_code == 1  # the server refused the data (SQLSTATE 23000)
    assert "failed: Column 'n' cannot be null (1048); earlier chunks stay committed" in (
        result.output
    )
    with conn.cursor() as cur:
        cur.execute("SELECT MIN(g), MAX(g), COUNT(*) FROM app.walk WHERE n = 1")
        low, high, changed = cur.fetchone()
    assert low == 0 and high <= 2 and 0 < changed < 3000  # chunks before g = 3, whole


def test_refusals(server: MariaDB, replica: MariaDB, connect: Any, state_path: Path) -> None:
    conn = connect("root")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.nokey")
        cur.execute("CREATE TABLE app.nokey (a INT)")
    runner = CliRunner()
    admin = [
        "--defaults-file",
        str(server.defaults_file("govern_admin")),
        "--state",
        str(state_path),
    ]
    no_key = runner.invoke(cli, ["chunk", "DELETE FROM app.nokey", *admin])
    assert no_key.exit_code == 2
    assert "app.nokey: no primary key to walk in chunks" in no_key.output
    limited = runner.invoke(cli, ["chunk", "DELETE FROM app.nokey LIMIT 5", *admin])
    assert limited.exit_code == 2 and "LIMIT" in limited.output
    on_replica = runner.invoke(
        cli,
        [
            "chunk",
            "DELETE FROM app.nokey",
            "--state",
            str(state_path),
            "--defaults-file",
            str(replica.defaults_file("govern_admin")),
        ],
    )
    assert on_replica.exit_code == 3 and "the server is a replica" in on_replica.output


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DELETE FROM t ORDER BY id LIMIT 10", "ORDER BY"),
        ("UPDATE t a SET x = 1", "a table alias"),
        ("UPDATE t, u SET t.x = u.x", "several tables"),
        ("DELETE t FROM t JOIN u ON u.id = t.id", "a join"),
        ("UPDATE IGNORE t SET x = 1", "IGNORE"),
        ("SELECT 1", "expected an UPDATE or DELETE statement"),
        ("DELETE FROM t; DELETE FROM u", "got 2"),
    ],
)
def test_statements_a_walk_cannot_keep_the_meaning_of(sql: str, message: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_statement(sql)
    assert message in error.value.message


def test_a_statement_is_taken_apart_on_its_tokens_not_regenerated() -> None:
    parsed = parse_statement(
        "update `app`.`t x` set a = a + 1, b = (SELECT MAX(c) FROM u WHERE d = 'x;y')"
        " WHERE id IN (SELECT id FROM v WHERE w LIMIT 3) ;"
    )
    assert parsed.action == "update" and parsed.table == "app.t x"
    assert parsed.set == "a = a + 1, b = (SELECT MAX(c) FROM u WHERE d = 'x;y')"
    assert parsed.where == "id IN (SELECT id FROM v WHERE w LIMIT 3)"
