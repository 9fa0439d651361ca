"""``govern doctor`` says whether each of govern collect's sources can be read from here,
and what would fix it; the sources do not decide doctor's exit code."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from govern.cli import cli
from tests.harness import MariaDB


def sources(server: MariaDB, user: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    result = CliRunner().invoke(
        cli, ["doctor", "--json", "--defaults-file", str(server.defaults_file(user))]
    )
    report = json.loads(result.output)
    return {item["key"]: item for item in report["collect_sources"]}, report


def set_output(server: MariaDB, value: str) -> None:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"SET GLOBAL log_output = '{value}'")
    conn.close()


def test_each_source_with_its_reason_and_fix(server: MariaDB) -> None:
    set_output(server, "FILE")
    found, report = sources(server, "govern_admin")
    assert list(found) == ["collect.file", "collect.table", "collect.performance_schema"]
    assert found["collect.file"]["ready"] is True  # the harness's log is local and readable
    table = found["collect.table"]
    assert table["ready"] is False
    assert table["missing"] == ["log_output=FILE: nothing is written to mysql.slow_log"]
    assert table["fixes"] == ["SET GLOBAL log_output = 'FILE,TABLE';"]
    digests = found["collect.performance_schema"]
    assert digests["ready"] is False
    assert digests["missing"] == [
        "performance_schema is OFF (it is switched on only at server start)"
    ]
    assert all(feature["key"] != "collect.table" for feature in report["features"])
    set_output(server, "FILE,TABLE")
    found, _ = sources(server, "govern_admin")
    assert found["collect.table"]["ready"] is True


def test_an_account_without_select_on_the_table_gets_the_grant(server: MariaDB) -> None:
    set_output(server, "FILE,TABLE")
    found, _ = sources(server, "govern_app")
    table = found["collect.table"]
    assert table["ready"] is False
    (reason,) = table["missing"]
    assert reason.startswith("reading mysql.slow_log: SELECT command denied")
    assert table["fixes"] == ["GRANT SELECT ON mysql.slow_log TO 'govern_app'@'127.0.0.1';"]


def test_the_text_report_lists_the_sources(server: MariaDB) -> None:
    set_output(server, "FILE")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["doctor", "--defaults-file", str(server.defaults_file("govern_admin"))]
    )
    assert "govern collect sources" in result.output
    assert "fix: SET GLOBAL log_output = 'FILE,TABLE';" in result.output
