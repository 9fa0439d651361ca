"""The parts of ``govern run``: claims on a real server, mode choice, values, JSON contracts."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from govern.cli import cli
from govern.errors import ServerError
from govern.privileges import parse_grants
from govern.server import build_info
from govern.wrappers import claims
from govern.wrappers.modes import Mode, choose
from govern.wrappers.session import exempted
from govern.wrappers.variables import LONG_QUERY_TIME, by_name
from tests.harness import MariaDB
from tests.paths import REPO
from tests.run.support import GOVERN, govern, set_global

MARIADB = {"version": "10.11.19-MariaDB-0+deb12u1", "version_comment": "Debian 12",
           "log_slow_query": "ON", "slow_query_log": "ON", "long_query_time": "1.000000",
           "log_output": "FILE", "hostname": "db1", "port": "3306"}  # fmt: skip
SUPER = parse_grants(["GRANT SUPER ON *.* TO `a`@`%`"])
NOTHING = parse_grants(["GRANT USAGE ON *.* TO `a`@`%`"])


# --- values and claims ----------------------------------------------------------------
def test_long_query_time_values_survive_every_form() -> None:
    for text in ("0", "0.000001", "1.5", "10", "31536000"):
        number = LONG_QUERY_TIME.parse(text)
        assert float(LONG_QUERY_TIME.literal(number)) == float(text)
        assert number < 1 << LONG_QUERY_TIME.bits
    assert LONG_QUERY_TIME.show(1_500_000) == "1.5s"
    switch = by_name("slow_query_log")
    assert (switch.literal(1), switch.show(0), switch.parse("ON")) == ("1", "OFF", 1)


@pytest.mark.server
def test_claims_carry_their_values_to_any_reader(server: MariaDB, connect: Any) -> None:
    first, second, reader = connect(), connect(), connect()

    def conn_id(conn: Any) -> int:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            return int(cur.fetchone()[0])

    a = claims.take(first, conn_id(first), LONG_QUERY_TIME, 1_500_000, 10_000_000, [],
                    (123, "host-a", "nightly"))  # fmt: skip
    b = claims.take(second, conn_id(second), LONG_QUERY_TIME, 1_500_000, 10_000_000, [a])
    assert (a.slot, b.slot) == (0, 1)
    assert b.since == a.since == conn_id(first)  # the window began with the first claim
    seen = claims.probe(reader, LONG_QUERY_TIME)
    assert [(c.slot, c.connection_id, c.original, c.value, c.since) for c in seen] == [
        (0, conn_id(first), 1_500_000, 10_000_000, conn_id(first)),
        (1, conn_id(second), 1_500_000, 10_000_000, conn_id(first)),
    ]
    assert claims.list_who(reader) is None  # no plugin on the harness server
    server.hang_up(first)  # a claim ends with its connection: nobody cleans up after the dead
    assert [c.slot for c in claims.probe(reader, LONG_QUERY_TIME)] == [1]
    claims.release(second, b.lock_names())
    assert claims.probe(reader, LONG_QUERY_TIME) == []


@pytest.mark.server
def test_mutex_times_out_with_a_clear_error(server: MariaDB, connect: Any) -> None:
    holder, waiter = connect(), connect()
    with (
        claims.server_mutex(holder),
        pytest.raises(ServerError, match="has held govern:mutex"),
        claims.server_mutex(waiter, timeout=0.2),
    ):
        pass


# --- mode choice ----------------------------------------------------------------------
def test_auto_mode() -> None:
    info = build_info(MARIADB)
    account = ("a", "%")
    assert choose(Mode.AUTO, info, NOTHING, account, ["mariadb", "-e", "x"]).mode is Mode.SESSION
    assert choose(Mode.AUTO, info, SUPER, account, ["./load.sh"]).mode is Mode.THRESHOLD
    assert (
        choose(Mode.AUTO, info, SUPER, account, ["mysql", "--no-defaults"]).mode is Mode.THRESHOLD
    )
    off = build_info({**MARIADB, "log_slow_query": "OFF", "slow_query_log": "OFF"})
    assert choose(Mode.AUTO, off, NOTHING, account, ["./load.sh"]).mode is Mode.NONE
    with pytest.raises(ServerError, match=r"GRANT SUPER ON \*\.\* TO 'a'@'%'"):
        choose(Mode.AUTO, info, NOTHING, account, ["./load.sh"])
    with pytest.raises(ServerError, match="may not change the global log_slow_query"):
        choose(Mode.GLOBAL, info, NOTHING, account, ["mariadb"])
    assert choose(Mode.SESSION, info, NOTHING, account, ["./load.py"]).mode is Mode.SESSION


@pytest.mark.server
def test_exempted_decorator_on_a_real_connection(server: MariaDB, connect: Any) -> None:
    set_global(connect(), "log_slow_query", "ON")
    conn = connect("govern_app")

    @exempted
    def load(conn: Any, rows: int) -> tuple[Any, ...]:
        with conn.cursor() as cur:
            cur.execute("SELECT @@SESSION.log_slow_query, %s", (rows,))
            return tuple(cur.fetchone())

    assert load(conn, 3) == (0, 3)
    with conn.cursor() as cur:
        cur.execute("SELECT @@SESSION.log_slow_query")
        assert cur.fetchone()[0] == 1  # the session's own value is back


# --- CLI --------------------------------------------------------------------------------
def test_a_bad_max_runtime_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["run", "--max-runtime", "soon", "--", "true"])
    assert result.exit_code == 2
    assert "expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'soon'" in result.output
    result = CliRunner().invoke(cli, ["run", "--max-runtime", "0", "--", "true"])
    assert result.exit_code == 2 and "expected a duration above 0, got '0'" in result.output


def test_run_without_a_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["run"])
    assert result.exit_code == 2 and "Missing argument 'COMMAND...'" in result.output


# --- JSON contracts: every field documented in docs/json.md, and only those ------------
def documented_fields(schema: str, table: int = 0) -> set[str]:
    """Field names in the ``table``-th table of the schema's section in docs/json.md."""
    text = (REPO / "docs" / "json.md").read_text()
    section = text.split(f"## `{schema}` version 1")[1].split("\n## ")[0]
    tables = re.findall(r"((?:^\|.*\|\n)+)", section, flags=re.M)
    names: set[str] = set()
    for row in tables[table].splitlines()[2:]:
        for name in re.findall(r"`([a-z_]+)(?:\[\])?`", row.split("|")[1]):
            names.add(name)
    return names


@pytest.mark.server
def test_documents_match_docs(server: MariaDB, connect: Any, state_path: Path) -> None:
    set_global(connect(), "log_slow_query", "ON")
    run = subprocess.run(
        [*govern(server, state_path, "run", "--mode", "global"), "--", "true"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    history = json.loads(
        subprocess.run(
            [*GOVERN, "history", "--json", "--state", str(state_path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert set(history) == documented_fields("govern.run.history")
    assert set(history["runs"][0]) == documented_fields("govern.run.history", 1)
    assert set(history["windows"][0]) == documented_fields("govern.run.history", 2)
    assert history["runs"][0]["window"] == history["windows"][0]
    for command, schema in (("status", "govern.run.status"), ("recover", "govern.run.recover")):
        result = subprocess.run(
            govern(server, state_path, command, "--json"), capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        assert document["schema"] == schema and document["schema_version"] == 1
        assert set(document) == documented_fields(schema)


@pytest.mark.server
def test_restore_waits_for_window_statements_bounded(server: MariaDB, connect: Any) -> None:
    """MySQL judges a statement by the global switch when it ends: govern lets it end first."""
    from govern.wrappers.blind import wait_until_idle

    mine = connect()
    with mine.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        first = int(cur.fetchone()[0])
    busy = connect()
    with busy.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        busy_id = int(cur.fetchone()[0])
    sleeper = threading.Thread(target=lambda: busy.cursor().execute("SELECT SLEEP(1)"))
    sleeper.start()
    time.sleep(0.2)
    still = wait_until_idle(mine, first, {first}, timeout=0.2)
    assert [c["id"] for c in still] == [busy_id]
    started = time.monotonic()
    assert wait_until_idle(mine, first, {first}, timeout=5) == []
    assert 0.2 < time.monotonic() - started < 2
    sleeper.join()


def test_session_exemption_by_flavor() -> None:
    from govern.wrappers.session import exemption, init_command

    assert init_command(build_info(MARIADB)) == "SET SESSION log_slow_query = OFF"
    mysql = build_info({"version": "8.0.36", "version_comment": "MySQL Community Server"})
    assert init_command(mysql) == "SET SESSION long_query_time = 31536000"
    percona = build_info(
        {
            "version": "8.0.36-28",
            "version_comment": "Percona Server (GPL), Release 28",
            "slow_query_log_use_global_control": "long_query_time",
        }
    )
    assert exemption(percona) == {} and init_command(percona) is None
    assert "session mode cannot exempt" in (percona.slow_log_global_control_warning or "")
