"""``govern load`` against the real MariaDB: formats, bad rows, exit codes, the JSON report."""

from __future__ import annotations

import gzip
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from govern.batch.load import SCHEMA, SCHEMA_VERSION
from govern.batch.sources import BadRow, RowFile
from govern.cli import cli
from tests.batch.support import LosingProxy, Loss
from tests.harness import MariaDB
from tests.paths import REPO

pytestmark = pytest.mark.server


@pytest.fixture
def db(connect: Any) -> Any:
    conn = connect("root", database="app")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS items")
        cur.execute(
            "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT,"
            " doc JSON, note TEXT)"
        )
    return conn


def rows(conn: Any, sql: str = "SELECT id, name, qty FROM items ORDER BY id") -> list[Any]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def govern_load(server: MariaDB, *args: str, user: str = "govern_app") -> Result:
    return CliRunner().invoke(
        cli, ["load", *args, "--defaults-file", str(server.defaults_file(user))]
    )


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def report(result: Result) -> dict[str, Any]:
    return dict(json.loads(result.stdout))


def test_csv_load_then_reload(server: MariaDB, db: Any, tmp_path: Path) -> None:
    text = (
        "\ufeffid,name,qty,note\n"
        '1,apple,3,"two\nlines"\n'
        '2,"pear, green",4,\\N\n'
        "\n"
        '3,"say ""hi""",,x\n'
    )
    csv_file = write(tmp_path / "items.csv", text)
    first = govern_load(server, csv_file, "--table", "app.items", "--key", "id", "--null", "")
    assert first.exit_code == 0, first.output
    assert "3 rows written" in first.stdout and "3 inserted" in first.stdout
    assert rows(db, "SELECT id, name, qty, note FROM items ORDER BY id") == [
        (1, "apple", 3, "two\nlines"),
        (2, "pear, green", 4, "\\N"),  # with --null '' the text \N is just text
        (3, 'say "hi"', None, "x"),
    ]
    again = govern_load(server, csv_file, "-t", "app.items", "-k", "id", "--null", "", "--json")
    assert again.exit_code == 0
    assert (report(again)["unchanged"], report(again)["inserted"]) == (3, 0)


def test_bad_rows_are_skipped_with_line_numbers(server: MariaDB, db: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(
        b"id,name,qty\n"
        b"1,ok,1\n"
        b"2,short\n"  # line 3: field count
        b"3,this name is far too long for the column,3\n"  # line 4: server refuses
        b"4,\\N,4\n"  # line 5: NULL into NOT NULL
        b"5,caf\xe9,5\n"  # line 6: Latin-1, not UTF-8
        b'6,"unclosed,6\n'  # line 7: quote never closed: swallows the rest
    )
    result = govern_load(server, str(path), "--table", "app.items", "--key", "id", "--json")
    assert result.exit_code == 1
    doc = report(result)
    assert (doc["rows"], doc["written"], doc["bad_rows"], doc["complete"]) == (6, 1, 5, True)
    lines = [(bad["line"], bad["reason"]) for bad in doc["bad_row_samples"]]
    assert [line for line, _ in lines] == [3, 4, 5, 6, 7]
    assert lines[0][1] == "2 fields, the header has 3"
    assert "Data too long for column 'name'" in lines[1][1]
    assert "cannot be null" in lines[2][1]
    assert lines[3][1] == "not UTF-8 (byte 6 of the line)"
    assert "not valid CSV" in lines[4][1]
    assert f"{path}:3: 2 fields, the header has 3" in result.stderr
    assert rows(db) == [(1, "ok", 1)]


def test_max_bad_stops_the_load(server: MariaDB, db: Any, tmp_path: Path) -> None:
    body = "".join(f"{i},n{i}\n" for i in range(50))  # every row lacks qty
    path = write(tmp_path / "x.csv", "id,name,qty\n1,first,1\n" + body)
    result = govern_load(server, path, "-t", "app.items", "-k", "id", "--max-bad", "3", "--json")
    assert result.exit_code == 1
    doc = report(result)
    assert doc["complete"] is False and doc["bad_rows"] == 4
    assert doc["error"] == "stopped after 4 bad rows (more than --max-bad 3)"
    assert "govern: error: stopped after 4 bad rows" in result.stderr


def test_jsonl_with_nested_values_and_bad_lines(server: MariaDB, db: Any, tmp_path: Path) -> None:
    lines = [
        {"id": 1, "name": "a", "qty": 1, "doc": {"tags": ["x", "ü"]}},
        "not json",
        [1, 2],
        {"id": 2, "name": "b", "doc": None},
        {"id": 3, "name": "c", "qty": True, "doc": [1, 2]},
    ]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n\n"
    path = write(tmp_path / "items.jsonl", text)
    result = govern_load(server, path, "-t", "items", "-D", "app", "-k", "id", "--json")
    assert result.exit_code == 1
    doc = report(result)
    assert doc["columns"] == ["id", "name", "qty", "doc"] and doc["format"] == "jsonl"
    assert [b["line"] for b in doc["bad_row_samples"]] == [2, 3, 4]
    assert doc["bad_row_samples"][0]["reason"].startswith("not JSON (")
    assert doc["bad_row_samples"][1]["reason"] == "a JSON list, not an object"
    assert doc["bad_row_samples"][2]["reason"] == (
        "other keys than line 1 (missing ['qty'], extra none)"
    )
    got = rows(db, "SELECT id, qty, JSON_EXTRACT(doc, '$.tags[1]') FROM items ORDER BY id")
    assert got == [(1, 1, '"ü"'), (3, 1, None)]


def test_gzip_and_tsv(server: MariaDB, db: Any, tmp_path: Path) -> None:
    path = tmp_path / "items.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("id\tname\tqty\n")
        handle.writelines(f"{i}\tn{i}\t{i}\n" for i in range(1, 1001))
    result = govern_load(server, str(path), "-t", "app.items", "-k", "id", "--json")
    assert result.exit_code == 0, result.output
    doc = report(result)
    assert (doc["format"], doc["inserted"], doc["statements"]) == ("tsv", 1000, 10)
    assert rows(db, "SELECT COUNT(*), SUM(qty) FROM items") == [(1000, 500500)]


def test_update_subset_and_keep_existing(server: MariaDB, db: Any, tmp_path: Path) -> None:
    govern_load(
        server,
        write(tmp_path / "a.csv", "id,name,qty\n1,a,1\n2,b,2\n"),
        "-t",
        "app.items",
        "-k",
        "id",
    )
    changed = write(tmp_path / "b.csv", "id,name,qty\n1,A,10\n2,B,20\n3,C,30\n")
    result = govern_load(
        server, changed, "-t", "app.items", "-k", "id", "--update", "qty", "--json"
    )
    assert (report(result)["updated"], report(result)["inserted"]) == (2, 1)
    assert rows(db) == [(1, "a", 10), (2, "b", 20), (3, "C", 30)]
    newer = write(tmp_path / "c.csv", "id,name,qty\n1,X,0\n4,D,40\n")
    kept = govern_load(server, newer, "-t", "app.items", "-k", "id", "--update", "", "--json")
    assert kept.exit_code == 0 and report(kept)["update"] == []
    assert (report(kept)["inserted"], report(kept)["unchanged"]) == (1, 1)
    assert rows(db)[0] == (1, "a", 10) and rows(db)[-1] == (4, "D", 40)


def test_transaction_all_is_all_or_nothing(server: MariaDB, db: Any, tmp_path: Path) -> None:
    body = "".join(f"{i},n{i},{i}\n" for i in range(1, 300)) + "300,\\N,1\n"
    path = write(tmp_path / "all.csv", "id,name,qty\n" + body)
    result = govern_load(
        server, path, "-t", "app.items", "-k", "id", "--transaction", "all", "--json"
    )
    assert result.exit_code == 1
    doc = report(result)
    assert "whole transaction was rolled back" in doc["error"] and doc["written"] == 0
    assert rows(db) == []


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, ["missing.csv"], "missing.csv: no such file"),
        (
            {"x.txt": "id\n1\n"},
            ["x.txt"],
            "x.txt: cannot tell the format from the name; pass --format",
        ),
        ({"x.csv": ""}, ["x.csv"], "x.csv:1: no header line (the column names)"),
        ({"x.csv": "id,nam\n1,a\n"}, ["x.csv"], "x.csv:1: app.items has no column 'nam'"),
        ({"x.csv": "name,qty\na,1\n"}, ["x.csv"], "x.csv:1: no column 'id' for --key"),
        (
            {"x.csv": "id\n1\n"},
            ["x.csv", "--key", "qty"],
            "--key qty: not the columns of a primary or unique key of app.items (its unique keys: PRIMARY (id))",
        ),
        (
            {"x.csv": "id\n1\n"},
            ["x.csv", "--table", "app.nope"],
            "table app.nope: no such table (or no privilege on it)",
        ),
        ({"x.jsonl": "[]\n"}, ["x.jsonl"], "x.jsonl: no JSON object to take the column names from"),
        ({"x.csv": "id,qty\n1,1\n"}, ["x.csv", "--update", "id"], "update: 'id' is a key column"),
    ],
)
def test_usage_errors_are_one_line_exit_2_and_write_nothing(
    server: MariaDB,
    db: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        write(tmp_path / name, text)
    defaults = ["--table", "app.items", "--key", "id"]
    given = {a for a in args if a.startswith("--")}
    extra = [x for i in range(0, 4, 2) if defaults[i] not in given for x in defaults[i : i + 2]]
    result = govern_load(server, *args, *extra)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"govern: error: {message}\n"
    assert rows(db) == []


def test_refuses_a_read_only_server_exit_3(
    server: MariaDB, connect: Any, tmp_path: Path, db: Any
) -> None:
    with connect().cursor() as cur:
        cur.execute("SET GLOBAL read_only = ON")
    path = write(tmp_path / "a.csv", "id,name\n1,a\n")
    result = govern_load(server, path, "-t", "app.items", "-k", "id", user="govern_admin")
    assert result.exit_code == 3
    assert (
        result.stderr == "govern: error: refusing to write to app.items: the server is read_only\n"
    )


def test_quiet_when_piped_and_notes_on_stderr(server: MariaDB, db: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "a.csv", "id,name\n1,a\n")
    result = govern_load(server, path, "-t", "app.items", "-k", "id")
    assert result.exit_code == 0
    assert result.stderr == (
        "govern: cannot tell whether the server is a replica (this account may not read"
        " replica status); it is not read_only, so writing anyway\n"
    )


def test_json_report_contract(server: MariaDB, db: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "a.csv", "id,name,qty\n1,a,1\n2,b\n")
    doc = report(govern_load(server, path, "-t", "app.items", "-k", "id", "--json"))
    assert doc["schema"] == SCHEMA == "govern.load" and doc["schema_version"] == SCHEMA_VERSION == 1
    expected = {
        "file": str, "format": str, "table": str, "key": list, "update": list, "columns": list,
        "transaction": str, "batch_size": int, "rows": int, "written": int, "inserted": int,
        "updated": int, "unchanged": int, "bad_rows": int, "bad_row_samples": list,
        "warnings": int, "warning_messages": list, "statements": int, "retries": int,
        "notes": list, "seconds": float, "rows_per_second": int, "complete": bool,
        "error": type(None), "exit_code": int, "throttle": type(None),
    }  # fmt: skip
    assert set(doc) == {"schema", "schema_version", *expected}
    for field, kind in expected.items():
        assert isinstance(doc[field], kind), field
    assert doc["rows"] == doc["written"] + doc["bad_rows"] and doc["exit_code"] == 1
    docs = (REPO / "docs" / "json.md").read_text()
    section = docs.split("## `govern.load` version 1", 1)[1].split("\n## ", 1)[0]
    for field in doc:
        documented = f"`{field}`" in section or f"`{field}[]`" in section
        assert documented, f"{field} is not documented in docs/json.md"


def test_row_file_reads_multiline_records_from_their_first_line(tmp_path: Path) -> None:
    path = write(tmp_path / "m.csv", 'a,b\n1,"x\ny\nz"\n2,\n3\n')
    with RowFile(path) as source:
        assert source.columns == ("a", "b")
        assert list(source.records()) == [
            (2, ("1", "x\ny\nz")),
            (5, ("2", "")),
            BadRow(6, "1 fields, the header has 2"),
        ]


def test_row_too_large_for_the_packet_is_a_bad_row(
    server: MariaDB, connect: Any, db: Any, tmp_path: Path
) -> None:
    with connect().cursor() as cur:
        cur.execute("SET GLOBAL max_allowed_packet = 65536")  # govern load connects afterwards
    huge = "y" * 70_000
    path = write(tmp_path / "big.csv", f"id,name,note\n1,a,small\n2,b,{huge}\n3,c,small\n")
    result = govern_load(server, path, "-t", "app.items", "-k", "id", "--json")
    assert result.exit_code == 1
    bad = report(result)["bad_row_samples"]
    assert [b["line"] for b in bad] == [3]
    assert "max_allowed_packet allows 65,536" in bad[0]["reason"]
    assert rows(db, "SELECT id FROM items ORDER BY id") == [(1,), (3,)]


def test_stdin_needs_a_format(server: MariaDB, db: Any) -> None:
    defaults = ["--defaults-file", str(server.defaults_file("govern_app"))]
    base = ["load", "-", "-t", "app.items", "-k", "id", *defaults]
    data = '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n'
    refused = CliRunner().invoke(cli, base, input=data)
    assert refused.exit_code == 2
    assert refused.stderr == "govern: error: reading stdin (-): pass --format csv, tsv or jsonl\n"
    loaded = CliRunner().invoke(cli, [*base, "--format", "jsonl", "--json"], input=data)
    assert loaded.exit_code == 0, loaded.output
    assert report(loaded)["file"] == "<stdin>" and report(loaded)["inserted"] == 2


def test_server_warnings_are_reported_and_exit_1(
    server: MariaDB, connect: Any, db: Any, tmp_path: Path
) -> None:
    with connect().cursor() as cur:
        cur.execute("SET GLOBAL sql_mode = ''")  # not strict: the server truncates and warns
    path = write(tmp_path / "w.csv", "id,name\n1,a name longer than twenty\n2,ok\n")
    result = govern_load(server, path, "-t", "app.items", "-k", "id")
    assert result.exit_code == 1
    assert "2 rows written" in result.stdout and "; 1 warning\n" in result.stdout
    assert "govern: warning: server: Warning 1265: Data truncated for column 'name'" in (
        result.stderr
    )
    assert rows(db)[0] == (1, "a name longer than t", None)


def test_header_only_file_loads_nothing_cleanly(server: MariaDB, db: Any, tmp_path: Path) -> None:
    result = govern_load(
        server, write(tmp_path / "h.csv", "id,name\n"), "-t", "app.items", "-k", "id", "--json"
    )
    assert result.exit_code == 0
    assert (report(result)["rows"], report(result)["written"], report(result)["complete"]) == (
        0,
        0,
        True,
    )


def test_a_value_the_server_cannot_take_is_a_bad_row(
    server: MariaDB, db: Any, tmp_path: Path
) -> None:
    """1e400 (inf to Python), NaN, a lone surrogate, a 5,000-digit number, 100,000-deep
    nesting: each a bad row with its line; the good rows around them land."""
    deep = "[" * 100_000 + "]" * 100_000
    lines = [
        '{"id": 1, "name": "first", "qty": 1, "doc": null}',
        '{"id": 2, "name": "huge", "qty": 1e400, "doc": null}',
        '{"id": 3, "name": "nan", "qty": NaN, "doc": null}',
        '{"id": 4, "name": "\\ud800", "qty": 1, "doc": null}',
        '{"id": 5, "name": "digits", "qty": ' + "1" * 5000 + ', "doc": null}',
        '{"id": 6, "name": "deep", "qty": 1, "doc": ' + deep + "}",
        '{"id": 7, "name": "inner", "qty": 1, "doc": {"y": 1e400}}',
        '{"id": 8, "name": "last", "qty": 8, "doc": {"y": 1.5}}',
    ]
    result = govern_load(
        server, write(tmp_path / "v.jsonl", "\n".join(lines) + "\n"), "--table", "app.items",
        "--key", "id", "--json", user="root",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    document = report(result)
    assert document["written"] == 2 and document["bad_rows"] == 6
    assert [b["line"] for b in document["bad_row_samples"]] == [2, 3, 4, 5, 6, 7]
    assert rows(db) == [(1, "first", 1), (8, "last", 8)]


def test_a_line_longer_than_max_line_is_a_bad_row_read_as_a_stream(
    server: MariaDB, db: Any, tmp_path: Path
) -> None:
    path = tmp_path / "long.csv"
    with path.open("w") as handle:
        handle.write("id,name,qty,note\n1,a,1,x\n2,b,2,")
        chunk = "y" * (1 << 20)
        for _ in range(200):  # a 200 MiB line: read in pieces, never held
            handle.write(chunk)
        handle.write("\n3,c,3,z\n")
    done = subprocess.run(
        [sys.executable, "-m", "govern", "load", str(path), "--table", "app.items", "--key", "id",
         "--max-line", "1M", "--defaults-file", str(server.defaults_file("root"))],
        capture_output=True,
        text=True,
    )  # fmt: skip
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert done.returncode == 1, done.stderr
    assert (
        f"{path}:3: a line of 209,715,207 bytes, longer than --max-line (1.00 MiB)" in done.stderr
    )
    assert rows(db) == [(1, "a", 1), (3, "c", 3)]
    assert peak_mib < 150, peak_mib


def test_a_gz_cut_after_written_rows_stops_the_load_with_exit_1(
    server: MariaDB, db: Any, tmp_path: Path
) -> None:
    """Found after rows were written: not exit 2 (that means "nothing was written")."""
    data = gzip.compress(
        ("id,name,qty\n" + "".join(f"{n},n{n},{n}\n" for n in range(1, 5001))).encode()
    )
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    result = govern_load(server, str(path), "--table", "app.items", "--key", "id", "--json",
                         "--batch-size", "100", user="root")  # fmt: skip
    assert result.exit_code == 1, result.output
    document = report(result)
    assert document["written"] > 100 and not document["complete"]
    assert document["error"].startswith(f"{path}:")
    assert "rows written before it stay" in document["error"]


@pytest.mark.parametrize(
    ("lose", "applied"),
    [("answer", True), ("statement", False)],
    ids=["committed-answer-lost", "statement-lost"],
)
def test_a_lost_connection_leaves_the_outcome_to_be_read_back(
    server: MariaDB, db: Any, tmp_path: Path, lose: Loss, applied: bool
) -> None:
    """The connection dies during a batch: whether the server committed it is unknown to
    the client. The load says so, reads the batch's keys back once the server answers
    again, and reports what is there."""
    proxy = LosingProxy(server.port, lose)
    cnf = tmp_path / "through-proxy.cnf"
    cnf.write_text(
        f"[client]\nhost=127.0.0.1\nport={proxy.port}\nuser=root\n"
        f"password={server.passwords['root']}\n"
    )
    path = write(
        tmp_path / "r.csv", "id,name,qty\n" + "".join(f"{n},n{n},{n}\n" for n in range(1, 31))
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "govern", "load", path, "--table", "app.items", "--key", "id",
             "--batch-size", "10", "--json", "--defaults-file", str(cnf)],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    finally:
        proxy.close()
    assert proxy.lost.is_set()
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    error = document["error"]
    assert "batch 0 (rows 1-10, first key id='1')" in error
    assert "whether it was applied is unknown" in error
    assert "nothing of it was applied" not in error
    in_table = rows(db)
    if applied:
        assert in_table == [(n, f"n{n}", n) for n in range(1, 11)]
        assert error.endswith("all 10 of its rows are in the table as sent: it was applied")
    else:
        assert in_table == []
        assert error.endswith("none of its 10 rows is in the table: it was not applied")


def test_a_server_crash_mid_load_is_read_back_when_it_returns(
    server: MariaDB, db: Any, connect: Any, tmp_path: Path
) -> None:
    """SIGKILL of the server during a load: the load waits for it, reads the batch it was
    writing back, and what it reports is what the table holds."""
    path = write(
        tmp_path / "big.csv",
        "id,name,qty\n" + "".join(f"{n},n{n},{n}\n" for n in range(1, 200_001)),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "govern", "load", path, "--table", "app.items", "--key", "id",
         "--json", "--defaults-file", str(server.defaults_file("root"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    watcher = connect()
    deadline = time.monotonic() + 60
    while rows(watcher, "SELECT COUNT(*) FROM app.items")[0][0] < 1000:
        assert time.monotonic() < deadline and proc.poll() is None, "the load did not start"
        time.sleep(0.02)
    server.kill()
    server.start()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    error = json.loads(out)["error"]
    assert "read back once the server answered again" in error, error
    first, last = (int(n) for n in re.search(r"rows (\d+)-(\d+)", error).groups())  # type: ignore[union-attr]
    present = rows(connect(), f"SELECT COUNT(*) FROM app.items WHERE id BETWEEN {first} AND {last}")
    if error.endswith("it was applied"):
        assert present == [(last - first + 1,)]
    else:
        assert error.endswith("it was not applied") and present == [(0,)]
