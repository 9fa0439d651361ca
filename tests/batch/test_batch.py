"""The batch writer against the real MariaDB: counts, batches, packets, failures, bytes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pymysql.constants import CLIENT

from govern.batch import BatchError, BatchWriter, RowTooLarge, insert, select_in, upsert
from govern.errors import EXIT_FINDINGS, EXIT_SERVER, ServerError, UsageError
from tests.harness import MariaDB

pytestmark = pytest.mark.server

Connect = Callable[..., Any]


def run(conn: Any, *statements: str) -> None:
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def fetch(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def inserts_sent(conn: Any) -> int:
    """INSERT statements this session sent so far (the server's own counter)."""
    return int(fetch(conn, "SHOW SESSION STATUS LIKE 'Com_insert'")[0][1])


@pytest.fixture
def db(connect: Connect) -> Any:
    conn = connect("root", database="app")
    run(
        conn,
        "DROP TABLE IF EXISTS items",
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT)",
    )
    return conn


def items(n: int, start: int = 0, name: str = "n") -> Iterator[tuple[int, str, int]]:
    return ((i, f"{name}{i}", i) for i in range(start, start + n))


def test_upsert_counts_inserted_updated_unchanged_exactly(db: Any) -> None:
    first = upsert(db, "items", items(250), key="id", columns=["id", "name", "qty"])
    assert (first.inserted, first.updated, first.unchanged, first.batches) == (250, 0, 0, 3)
    # rows 0-49 unchanged, 50-149 renamed, 250-349 new; a generator, never a list
    rows = ((i, f"n{i}" if i < 50 else f"m{i}", i) for i in [*range(0, 150), *range(250, 350)])
    second = upsert(db, "items", rows, key="id", columns=["id", "name", "qty"])
    assert (second.inserted, second.updated, second.unchanged) == (100, 100, 50)
    assert fetch(db, "SELECT COUNT(*), SUM(name LIKE 'm%') FROM items") == [(350, 200)]
    assert fetch(db, "SELECT name FROM items WHERE id IN (49, 50, 300) ORDER BY id") == [
        ("n49",),
        ("m50",),
        ("m300",),
    ]


def test_dict_rows_and_update_subset(db: Any) -> None:
    upsert(db, "items", [{"id": 1, "name": "a", "qty": 1}], key="id")
    result = upsert(db, "items", [{"id": 1, "name": "b", "qty": 9}], key="id", update=["qty"])
    assert (result.updated, result.inserted) == (1, 0)
    assert fetch(db, "SELECT name, qty FROM items") == [("a", 9)]
    with pytest.raises(UsageError, match=r"row 2: its keys differ.*missing \['qty'\]"):
        upsert(db, "items", [{"id": 2, "name": "x", "qty": 1}, {"id": 3, "name": "y"}], key="id")


def test_duplicates_inside_the_input_last_one_wins(db: Any) -> None:
    rows = [(1, "a", 1), (2, "b", 2), (1, "c", 3), (1, "c", 3)]
    result = upsert(db, "items", rows, key="id", columns=["id", "name", "qty"])
    # (1,a) inserted, (2,b) inserted, (1,c) updates it, the last copy changes nothing
    assert (result.inserted, result.updated, result.unchanged) == (2, 1, 1)
    assert fetch(db, "SELECT id, name FROM items ORDER BY id") == [(1, "c"), (2, "b")]


def test_last_partial_batch_gets_its_own_statement(db: Any) -> None:
    before = inserts_sent(db)
    writer = BatchWriter(db, "items", ["id", "name", "qty"], on_duplicate="update", key=["id"])
    assert [len(b) for b in writer.batches(items(250))] == [100, 100, 50]
    result = writer.write(items(250))
    assert inserts_sent(db) - before == 3 and result.inserted == 250
    assert sorted(writer._texts) == [50, 100]  # one text per row count, reused


def test_padding_reuses_the_full_statement_and_is_not_counted(db: Any) -> None:
    upsert(db, "items", items(30), key="id", columns=["id", "name", "qty"])
    writer = BatchWriter(
        db, "items", ["id", "name", "qty"], on_duplicate="update", key=["id"], pad_last=True
    )
    result = writer.write(items(230))
    assert (result.inserted, result.updated, result.unchanged) == (200, 0, 30)
    assert sorted(writer._texts) == [100]
    assert fetch(db, "SELECT COUNT(*), MAX(id) FROM items") == [(230, 229)]


def test_found_rows_connection_counts_exactly(server: MariaDB, connect: Connect) -> None:
    conn = connect("root", database="app", client_flag=CLIENT.FOUND_ROWS)
    run(conn, "DROP TABLE IF EXISTS fr", "CREATE TABLE fr (id INT PRIMARY KEY, v INT)")
    upsert(conn, "fr", [(1, 1), (2, 2)], key="id", columns=["id", "v"])
    rows = [(1, 1), (2, 5), (3, 3), (4, 4)]  # unchanged, updated, inserted, and a last batch of 1
    result = upsert(conn, "fr", rows, key="id", columns=["id", "v"], batch_size=3)
    assert (result.inserted, result.updated, result.unchanged, result.batches) == (2, 1, 1, 2)
    assert fetch(conn, "SELECT COUNT(*) FROM fr") == [(4,)]


def test_packet_size_splits_statements(server: MariaDB, connect: Connect) -> None:
    root = connect()
    run(root, "SET GLOBAL max_allowed_packet = 65536")
    conn = connect("root", database="app")  # its session copies the small packet size
    run(conn, "DROP TABLE IF EXISTS wide", "CREATE TABLE wide (id INT PRIMARY KEY, doc TEXT)")
    rows = [(i, "x" * 5000) for i in range(100)]
    before = inserts_sent(conn)
    writer = BatchWriter(conn, "wide", ["id", "doc"], on_duplicate="update", key=["id"])
    assert writer.packet_limit == 65536
    sizes = [len(b) for b in writer.batches(rows)]
    assert sum(sizes) == 100 and max(sizes) * 5000 < 65536 and len(sizes) >= 9
    result = writer.write(rows)
    assert result.inserted == 100 and inserts_sent(conn) - before == len(sizes)
    too_big = [(1006, "small"), (1007, "y" * 70_000)]
    with pytest.raises(RowTooLarge, match=r"row 2: key \(1007,\) needs 70,\d{3} bytes"):
        upsert(conn, "wide", too_big, key="id", columns=["id", "doc"])
    assert fetch(conn, "SELECT COUNT(*) FROM wide WHERE id > 999") == [(0,)]


def test_session_packet_size_taken_at_connect_is_respected(
    server: MariaDB, connect: Connect
) -> None:
    conn = connect("root", database="app")  # connected while the global is 16M
    run(connect(), "SET GLOBAL max_allowed_packet = 65536")
    writer = BatchWriter(conn, "items", ["id", "name", "qty"], on_duplicate="update", key=["id"])
    assert writer.packet_limit == 65536  # the smaller of the session's and the global


def test_placeholder_limit_with_wide_rows(db: Any) -> None:
    columns = [f"c{i}" for i in range(700)]
    run(db, "DROP TABLE IF EXISTS w700")
    run(db, f"CREATE TABLE w700 (id INT PRIMARY KEY, {', '.join(c + ' INT' for c in columns)})")
    rows = [(n, *range(700)) for n in range(200)]
    before = inserts_sent(db)
    result = upsert(db, "w700", rows, key="id", columns=["id", *columns])
    # 701 columns: at most 65535 // 701 = 93 rows per statement
    assert result.inserted == 200 and result.batches == 3 and inserts_sent(db) - before == 3
    assert fetch(db, "SELECT COUNT(*), SUM(c699) FROM w700") == [(200, 200 * 699)]


@pytest.mark.parametrize("autocommit", [True, False])
def test_failure_mid_batch_applies_nothing_of_that_batch(
    server: MariaDB, connect: Connect, autocommit: bool
) -> None:
    conn = connect("root", database="app", autocommit=autocommit)
    run(
        conn,
        "DROP TABLE IF EXISTS items",
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT)",
    )
    rows = [(i, "x" * (30 if i == 150 else 3), i) for i in range(300)]  # 150: too long
    with pytest.raises(BatchError) as caught:
        upsert(conn, "items", rows, key="id", columns=["id", "name", "qty"])
    error = caught.value
    assert (error.index, error.first_row, error.first_key, error.errno) == (1, 100, (100,), 1406)
    assert error.exit_code == EXIT_FINDINGS
    assert error.result.inserted == 100 and error.result.batches == 1
    assert "batch 1 (rows 101-200, first key id=100)" in error.message
    assert "nothing of it was applied" in error.message
    check = connect("root", database="app")
    assert fetch(check, "SELECT COUNT(*), MIN(id), MAX(id) FROM items") == [(100, 0, 99)]


def test_transaction_all_rolls_everything_back(db: Any, connect: Connect) -> None:
    rows = [(i, None if i == 250 else "ok", i) for i in range(300)]  # 250: NULL in NOT NULL
    with pytest.raises(BatchError) as caught:
        upsert(db, "items", rows, key="id", columns=["id", "name", "qty"], transaction="all")
    assert caught.value.index == 2 and caught.value.result.inserted == 0
    assert "whole transaction was rolled back" in caught.value.message
    assert fetch(connect("root", database="app"), "SELECT COUNT(*) FROM items") == [(0,)]


def test_unicode_and_binary_round_trip(db: Any) -> None:
    run(
        db,
        "DROP TABLE IF EXISTS blobs",
        "CREATE TABLE blobs (id INT PRIMARY KEY, txt VARCHAR(100) CHARACTER SET utf8mb4,"
        " bin VARBINARY(300), doc BLOB)",
    )
    texts = ["żółw 🐢", "日本語", 'it\'s a \\ "quote"', "nul\x00inside", "\n\r\t\x1a", ""]
    every_byte = bytes(range(256))
    rows = [(i, t, every_byte[i:] + every_byte[:i], t.encode()) for i, t in enumerate(texts)]
    result = upsert(db, "blobs", rows, key="id", columns=["id", "txt", "bin", "doc"], batch_size=4)
    assert result.inserted == len(texts)
    back = {r["id"]: r for r in select_in(db, "blobs", "id", iter(range(len(texts))))}
    for i, txt, binary, doc in rows:
        assert (back[i]["txt"], back[i]["bin"], back[i]["doc"]) == (txt, binary, doc)
    again = upsert(db, "blobs", rows, key="id", columns=["id", "txt", "bin", "doc"])
    assert again.unchanged == len(texts)


def test_insert_ignore_keeps_existing_rows_but_fails_bad_values(db: Any) -> None:
    insert(db, "items", items(10), columns=["id", "name", "qty"])
    result = insert(db, "items", items(15, name="z"), ignore=True, columns=["id", "name", "qty"])
    assert (result.inserted, result.unchanged) == (5, 10)
    assert fetch(db, "SELECT COUNT(*), SUM(name LIKE 'z%') FROM items") == [(15, 5)]
    with pytest.raises(BatchError) as caught:  # INSERT IGNORE would have truncated it
        insert(db, "items", [(99, "y" * 30, 1)], ignore=True, columns=["id", "name", "qty"])
    assert caught.value.errno == 1406
    with pytest.raises(BatchError) as caught:
        insert(db, "items", items(3), columns=["id", "name", "qty"])
    assert caught.value.errno == 1062 and caught.value.exit_code == EXIT_FINDINGS


def test_warnings_are_counted_and_kept(db: Any) -> None:
    run(db, "SET SESSION sql_mode = ''")  # not strict: the server truncates and warns
    result = upsert(
        db, "items", [(1, "y" * 30, 1), (2, "ok", 2)], key="id", columns=["id", "name", "qty"]
    )
    assert result.warnings == 1
    assert result.warning_messages == ["Warning 1265: Data truncated for column 'name' at row 1"]


def test_lock_wait_timeout_is_retried(server: MariaDB, connect: Connect, db: Any) -> None:
    upsert(db, "items", items(5), key="id", columns=["id", "name", "qty"])
    holder = connect("root", database="app", autocommit=False)
    run(holder, "SELECT * FROM items WHERE id = 3 FOR UPDATE")
    run(db, "SET SESSION innodb_lock_wait_timeout = 1")
    release = threading.Timer(1.5, holder.commit)
    release.start()
    try:
        result = upsert(db, "items", items(5, name="r"), key="id", columns=["id", "name", "qty"])
    finally:
        release.join()
    assert result.retries >= 1 and result.updated == 5


def test_refuses_read_only_and_replica(
    server: MariaDB, connect: Connect, replica: MariaDB, db: Any
) -> None:
    run(connect(), "SET GLOBAL read_only = ON")
    with pytest.raises(ServerError, match="read_only"):
        upsert(
            connect("root", database="app"),
            "items",
            [(1, "a", 1)],
            key="id",
            columns=["id", "name", "qty"],
        )
    run(connect(), "SET GLOBAL read_only = OFF")
    position = fetch(connect(), "SELECT @@gtid_binlog_pos")[0][0]
    conn: Any = replica.connect("root")
    assert fetch(conn, f"SELECT MASTER_GTID_WAIT('{position}', 30)") == [(0,)]  # caught up
    conn.select_db("app")
    run(conn, "SET GLOBAL read_only = OFF")  # even writable, a replica is refused
    try:
        with pytest.raises(ServerError, match="replica"):
            insert(conn, "items", [(1, "a", 1)], columns=["id", "name", "qty"])
    finally:
        run(conn, "SET GLOBAL read_only = ON")
        conn.close()


def test_schema_mistakes_fail_before_writing(db: Any) -> None:
    run(
        db,
        "DROP TABLE IF EXISTS people",
        "CREATE TABLE people (id INT PRIMARY KEY, email VARCHAR(50) UNIQUE, city VARCHAR(20),"
        " upper_city VARCHAR(20) AS (UPPER(city)) VIRTUAL, KEY (city))",
    )
    cols = ["id", "email", "city"]
    with pytest.raises(UsageError, match=r"key city: not the columns of a primary or unique key"):
        upsert(db, "people", [(1, "a@x", "P")], key="city", columns=cols)
    with pytest.raises(UsageError, match=r"app.people has no column 'mail'"):
        upsert(db, "people", [(1, "a@x")], key="id", columns=["id", "mail"])
    with pytest.raises(UsageError, match="generated"):
        upsert(db, "people", [(1, "P")], key="id", columns=["id", "upper_city"])
    with pytest.raises(UsageError, match="no such table"):
        upsert(db, "nope", [(1,)], key="id", columns=["id"])
    with pytest.raises(UsageError, match=r"row 2: 2 values for 3 columns"):
        upsert(db, "people", [(1, "a@x", "P"), (2, "b@x")], key="id", columns=cols)
    result = upsert(db, "people", [(1, "a@x", "P")], key="EMAIL", columns=cols)
    assert result.inserted == 1 and any("2 unique keys" in note for note in result.notes)
    assert fetch(db, "SELECT COUNT(*) FROM people") == [(1,)]


def test_myisam_is_noted(db: Any) -> None:
    run(db, "DROP TABLE IF EXISTS legacy", "CREATE TABLE legacy (id INT PRIMARY KEY) ENGINE=MyISAM")
    result = upsert(db, "legacy", [(1,)], key="id", columns=["id"], update=[])
    assert any("MyISAM, which has no transactions" in note for note in result.notes)


def test_select_in_chunks_any_iterator(db: Any) -> None:
    upsert(db, "items", items(50), key="id", columns=["id", "name", "qty"])

    def selects(keys: Any) -> tuple[list[dict[str, Any]], int]:
        before = int(fetch(db, "SHOW SESSION STATUS LIKE 'Com_select'")[0][1])
        rows = list(select_in(db, "items", "ID", keys, columns=["id", "name"], chunk_size=7))
        return rows, int(fetch(db, "SHOW SESSION STATUS LIKE 'Com_select'")[0][1]) - before

    _, lookups = selects([])  # describing the table and the packet size
    keys = (k for k in [*range(0, 60, 2), 3, 3])  # 32 keys, 26 present, one twice
    rows, count = selects(keys)
    assert sorted(r["id"] for r in rows) == sorted([*range(0, 50, 2), 3])
    assert rows[0] == {"id": 0, "name": "n0"}
    assert count - lookups == 5  # 32 keys in chunks of 7


def test_app_account_can_load(app_settings: Any) -> None:
    from govern.connection import connect as govern_connect

    conn = govern_connect(app_settings)
    conn.select_db("app")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS appt")
        cur.execute("CREATE TABLE appt (id INT PRIMARY KEY, v INT)")
    result = upsert(conn, "appt", [(1, 1), (2, 2)], key="id", columns=["id", "v"])
    assert result.inserted == 2
    assert any("cannot tell whether the server is a replica" in n for n in result.notes)
    conn.close()


def test_connection_lost_mid_load_is_a_server_error(db: Any, connect: Connect) -> None:
    conn_id = fetch(db, "SELECT CONNECTION_ID()")[0][0]
    killer = connect()

    def kill_after_first_batch(rows: int) -> None:
        run(killer, f"KILL CONNECTION {conn_id}")

    with pytest.raises(BatchError) as caught:
        upsert(db, "items", items(300), key="id", columns=["id", "name", "qty"],
               progress=kill_after_first_batch)  # fmt: skip
    error = caught.value
    assert error.exit_code == EXIT_SERVER and error.index == 1
    assert error.result.inserted == 100
    assert fetch(connect("root", database="app"), "SELECT COUNT(*) FROM items") == [(100,)]


def test_an_iterator_is_consumed_batch_by_batch(db: Any) -> None:
    pulled = 0
    seen_at_commit: list[int] = []

    def rows() -> Iterator[tuple[int, str, int]]:
        nonlocal pulled
        for row in items(1000):
            pulled += 1
            yield row

    upsert(db, "items", rows(), key="id", columns=["id", "name", "qty"],
           progress=lambda n: seen_at_commit.append(pulled))  # fmt: skip
    # when batch k is committed, at most one row of batch k+1 has been read
    assert seen_at_commit == [101, 201, 301, 401, 501, 601, 701, 801, 901, 1000]
