"""The rules' claims, checked on the real MariaDB, and --target read from a live server.

Each rule's docstring says what the server does with its anti-pattern; here the
test server does it: QC001's queries are served from the cache (stale), QC004's
are never stored, QC002's are errors 1234/1221, BATCH006's row alias is error
1064, BATCH004's IF chain and its VALUE() rewrite store the same rows, and 1390 is
the placeholder limit BATCH001 enforces.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest
from click.testing import CliRunner

from govern.cli import cli
from govern.rules.registry import get_rule
from govern.rules.sql.split import parse_script
from tests.harness import MariaDB

pytestmark = pytest.mark.server

SCHEMA = "govern_lint_claims"
TABLES = [
    "CREATE TABLE orders (id INT PRIMARY KEY, status INT, created_at DATETIME)",
    "CREATE TABLE archived_orders (id INT PRIMARY KEY)",
    "CREATE TABLE order_ids (id INT PRIMARY KEY)",
    "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(20), email VARCHAR(40))",
    "CREATE TABLE accounts (id INT PRIMARY KEY, balance INT)",
    "CREATE TABLE daily_summary (day DATE PRIMARY KEY, total INT, cnt INT)",
    "CREATE TABLE stats (id INT PRIMARY KEY, hits INT)",
    "INSERT INTO orders VALUES (1, 1, NOW()), (2, 0, NOW() - INTERVAL 2 DAY)",
    "INSERT INTO users VALUES (42, 'ann', 'ann@example.com'), (43, 'bob', 'bob@example.com')",
    "INSERT INTO accounts VALUES (7, 100)",
    "INSERT INTO daily_summary VALUES ('2025-01-01', 10, 1), ('2025-01-02', 20, 2)",
]


def _statements(example_sql: str) -> list[str]:
    return [s.text for s in parse_script(example_sql).statements]


@pytest.fixture
def claims(server: MariaDB, connect: Callable[..., Any]) -> Iterator[tuple[Any, Any]]:
    """(admin cursor for status counters, a fresh client cursor) with query_cache_type=DEMAND."""
    admin = connect()
    cur = admin.cursor()
    cur.execute("SET SESSION sql_log_bin = 0")
    cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    cur.execute(f"CREATE DATABASE {SCHEMA}")
    cur.execute(f"USE {SCHEMA}")
    for statement in TABLES:
        cur.execute(statement)
    cur.execute("SET GLOBAL query_cache_size = 4194304")
    cur.execute("SET GLOBAL query_cache_type = DEMAND")
    cur.execute("FLUSH QUERY CACHE")
    client = connect(database=SCHEMA).cursor()  # opened after the cache is on
    client.execute("SET SESSION sql_log_bin = 0")
    yield cur, client
    cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")


def _hits(admin: Any) -> int:
    admin.execute("SHOW GLOBAL STATUS LIKE 'Qcache_hits'")
    return int(admin.fetchone()[1])


def _served_from_cache(admin: Any, client: Any, sql: str) -> bool:
    """Run ``sql`` twice; True when the second run was answered by the query cache."""
    client.execute(sql)
    client.fetchall()
    before = _hits(admin)
    client.execute(sql)
    client.fetchall()
    return _hits(admin) == before + 1


def _examples(rule_id: str, kind: str) -> list[str]:
    rule = get_rule(rule_id)
    assert rule is not None
    return [e.sql for e in rule.examples()[kind]]


def test_qc001_queries_are_served_stale_by_mariadb(claims: tuple[Any, Any]) -> None:
    admin, client = claims
    queries = [
        sql for example in _examples("QC001", "Anti-pattern") for sql in _statements(example)
    ]
    assert len(queries) >= 3, "QC001's anti-pattern examples are the subject of this test"
    assert [sql for sql in queries if not _served_from_cache(admin, client, sql)] == []
    # What "stale" means: UUID() repeats, and SELECT … INTO skips the assignment on a hit.
    client.execute("SELECT SQL_CACHE id, UUID() FROM users")
    first = client.fetchall()
    client.execute("SELECT SQL_CACHE id, UUID() FROM users")
    assert client.fetchall() == first
    client.execute("SELECT SQL_CACHE name FROM users WHERE id = 42 INTO @who")
    client.execute("SET @who = 'nobody'")
    client.execute("SELECT SQL_CACHE name FROM users WHERE id = 42 INTO @who")
    client.execute("SELECT @who")
    assert client.fetchone()[0] == "nobody"


def test_qc004_queries_are_never_stored(claims: tuple[Any, Any]) -> None:
    admin, client = claims
    served = {}
    for example in _examples("QC004", "Anti-pattern"):
        *setup, sql = _statements(example)
        for statement in setup:
            client.execute(statement)
        served[sql] = _served_from_cache(admin, client, sql)
    assert len(served) >= 3, "QC004's anti-pattern examples are the subject of this test"
    assert [sql for sql, hit in served.items() if hit] == []


def test_best_practice_sql_cache_reads_hit(claims: tuple[Any, Any]) -> None:
    admin, client = claims
    cached = [
        sql
        for rule_id in ("QC001", "QC002", "QC004")
        for example in _examples(rule_id, "Best practice")
        for sql in _statements(example)
        if "SQL_CACHE" in sql
    ]
    assert len(cached) >= 3, "the best practices' SQL_CACHE reads are the subject of this test"
    assert [sql for sql in cached if not _served_from_cache(admin, client, sql)] == []


def test_qc002_misplaced_hints_are_server_errors(claims: tuple[Any, Any]) -> None:
    _, client = claims
    codes = []
    for example in _examples("QC002", "Anti-pattern"):
        for sql in _statements(example):
            try:
                client.execute(sql)
                codes.append(0)
            except pymysql.err.MySQLError as exc:
                codes.append(exc.args[0])
    assert codes == [1234, 1234, 1221, 0]  # the INSERT … SELECT is accepted (and not cached)


def test_batch006_row_alias_is_a_syntax_error_and_value_works(claims: tuple[Any, Any]) -> None:
    _, client = claims
    anti = _statements(_examples("BATCH006", "Anti-pattern")[0])[0]
    with pytest.raises(pymysql.err.ProgrammingError) as error:
        client.execute(anti)
    assert error.value.args[0] == 1064
    client.execute(_statements(_examples("BATCH006", "Best practice")[0])[0])


def test_batch004_rewrite_stores_the_same_rows(claims: tuple[Any, Any]) -> None:
    _, client = claims
    anti, _ = _examples("BATCH004", "Anti-pattern")
    best = _examples("BATCH004", "Best practice")[0]
    results = []
    for sql in (anti, best):
        client.execute("DELETE FROM stats")
        client.execute("INSERT INTO stats VALUES (1, 0), (2, 0), (3, 0)")
        client.execute(_statements(sql)[0])
        client.execute("SELECT id, hits FROM stats ORDER BY id")
        results.append(client.fetchall())
    assert results[0] == results[1] == ((1, 10), (2, 20), (3, 30))


def test_batch001_limit_is_the_servers(claims: tuple[Any, Any]) -> None:
    _, client = claims
    rows = ",".join(["(?, ?)"] * 32_768)  # 65,536 placeholders
    with pytest.raises(pymysql.err.MySQLError) as error:
        client.execute(f"PREPARE s FROM 'INSERT INTO stats (id, hits) VALUES {rows}'")
    assert error.value.args[0] == 1390
    ok = ",".join(["(?, ?)"] * 32_767)
    client.execute(f"PREPARE s FROM 'INSERT INTO stats (id, hits) VALUES {ok}'")
    client.execute("DEALLOCATE PREPARE s")


# --- --target from a live server ------------------------------------------------------------


def _lint(*args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["lint", "-", "--format", "json", *args], input=SQL_CACHED)
    document = json.loads(result.stdout) if result.stdout.startswith("{") else {}
    return result.exit_code, document, result.output


SQL_CACHED = "SELECT SQL_CACHE day, total FROM daily_summary;\n"


def test_target_read_from_a_live_server(server: MariaDB, connect: Callable[..., Any]) -> None:
    cnf = str(server.defaults_file("govern_app"))
    admin = connect().cursor()
    admin.execute("SET GLOBAL query_cache_type = OFF")
    code, document, _ = _lint("--defaults-file", cnf)
    assert code == 1
    (target,) = document["targets"]
    assert target.startswith("mariadb-10.11 (MariaDB 10.11.") and target.endswith(", live)")
    (finding,) = document["findings"]
    assert finding["rule"] == "QC003" and "query_cache_type=OFF" in finding["message"]
    admin.execute("SET GLOBAL query_cache_size = 1048576")
    admin.execute("SET GLOBAL query_cache_type = DEMAND")
    code, document, _ = _lint("--target", "server", "--defaults-file", cnf)
    assert code == 0 and document["findings"] == []


def test_unreachable_target_server_is_exit_3() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, output = _lint("-h", "127.0.0.1", "-P", str(port), "-u", "nobody")
    assert code == 3 and output.startswith("govern: error:")


def test_target_name_and_connection_options_conflict(server: MariaDB) -> None:
    code, _, output = _lint("--target", "mysql-8.0", "--defaults-file", str(server.defaults_file()))
    assert code == 2 and "not both" in output
