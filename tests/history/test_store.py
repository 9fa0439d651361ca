"""The history store on both backends (a SQLite file, the harness's MariaDB): merged reports
equal a digest of the raw log, a bucket written twice is one bucket, two writer processes,
migrations, roll-ups equal the merge of their hours, retention, and nothing binlogged."""

from __future__ import annotations

import datetime as dt
import json
import marshal
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern import native, sketch
from govern.digest.columns import PLAIN
from govern.digest.document import build_document, full_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from govern.errors import ServerError, UsageError
from govern.history import rows
from govern.history.ladders import Ladder
from govern.history.mysql import MysqlStore, parse_url
from govern.history.sql import MIGRATIONS, SqlStore, _text
from govern.history.sqlite import SqliteStore
from govern.history.store import open_store
from govern.rules import digest as rules_digest
from govern.rules.catalog.meta001 import MAX_DEPTH
from govern.rules.catalog.parsing import STATEMENT_WORDS
from govern.rules.digest import DigestRuleOptions, check_document
from govern.rules.screen import Screen
from tests.collect.support import assert_same_events, one_shot
from tests.harness import MariaDB
from tests.history.support import at, log_path, minute_buckets, mysql_url
from tests.paths import REPO

WIDE = (dt.datetime(2000, 1, 1), dt.datetime(2100, 1, 1))
DAY = "2026-11-20"


@pytest.fixture(scope="module")
def buckets(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ...]:
    return minute_buckets(log_path(), tmp_path_factory.mktemp("buckets"))


@pytest.fixture(params=["sqlite", "mysql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "sqlite":
        opened: SqlStore = SqliteStore(tmp_path / "history.db")
    else:
        server: MariaDB = request.getfixturevalue("server")
        opened = MysqlStore.open(mysql_url(server))
    yield opened
    if isinstance(opened, MysqlStore):
        opened.run(f"DROP DATABASE `{opened.target.schema}`")
    opened.close()


def _count(store: SqlStore, table: str) -> int:
    return int(store.run(f"SELECT COUNT(*) FROM {table}")[0][0])


def test_merged_buckets_equal_a_digest_of_the_raw_log(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    assert len(buckets) >= 2
    for document in buckets:
        store.write("db1", document["collect"]["bucket"]["start"], document)
    merged = full_document(store.digest(*WIDE))
    expected = one_shot([log_path()], label="db1")
    assert_same_events(merged, expected)  # counts, sums, sketches, spreads: exact
    for mine, theirs in zip(merged["classes"], expected["classes"], strict=True):
        for name in ("p95", "p99", "median"):
            ours, exact = mine["metrics"]["Query_time"][name], theirs["metrics"]["Query_time"][name]
            assert abs(ours - exact) <= exact * sketch.RELATIVE_ERROR
        assert mine["top_hosts"] == [
            {
                "host": "db1",
                "count": mine["count"],
                "query_time": mine["metrics"]["Query_time"]["sum"],
            }
        ]
    assert merged["store"] == {"url": store.url, "hosts": ["db1"], "host_filter": None}


def _plain(document: dict[str, Any]) -> dict[bytes, bool]:
    """Each class's fingerprint: is its sample lexically plain to the rules' screens?"""
    columns = Screen.of(document["classes"], STATEMENT_WORDS, MAX_DEPTH).columns
    ends = columns.fingerprint_ends
    prints = [columns.fingerprints[start:end] for start, end in zip((0, *ends), ends, strict=False)]
    return {fp: bool(flag & PLAIN) for fp, flag in zip(prints, columns.flags, strict=True)}


@pytest.mark.skipif(not native.available(), reason="the native core is not built")
def test_a_stored_report_is_screened_as_a_log_digest(
    tmp_path: Path, buckets: tuple[dict[str, Any], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's merge is a Python source of classes; the core still marks its lexically
    plain samples for the rules' screens, as it does for a log it digests (META001 reads
    the same classes either way), and the findings are those of every rule over every
    class."""
    store = SqliteStore(tmp_path / "history.db")
    for document in buckets:
        store.write("db1", document["collect"]["bucket"]["start"], document)
    stored = build_document(store.digest(*WIDE))
    store.close()
    logged = build_document(digest_paths([str(log_path())], DigestOptions(jobs=1)))
    plain = _plain(stored)
    assert plain == _plain(logged) and any(plain.values())
    options = DigestRuleOptions(target="mariadb-10.11")
    fast = check_document(stored, options)
    monkeypatch.setattr(
        rules_digest,
        "screened",
        lambda screen, rules, ctx: ((i, rules) for i in range(screen.size)),
    )
    slow = check_document(stored, options)
    assert fast.to_json() == slow.to_json() and fast.findings
    assert {k: [f.to_json() for f in v] for k, v in fast.by_class.items()} == {
        k: [f.to_json() for f in v] for k, v in slow.by_class.items()
    }


def test_class_states_of_the_older_forms_still_read(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    """States written by a govern before version 2 (version 1: zlib of the whole marshal
    tuple; before it zlib JSON of the class document) merge to the same digest as version
    2, all mixed in one store."""
    for document in buckets:
        store.write("db1", document["collect"]["bucket"]["start"], document)
    current = full_document(store.digest(*WIDE))
    number = 0
    for document in buckets:
        start = store.run(
            "SELECT start FROM history_buckets WHERE host = ? AND start = ?",
            ("db1", document["collect"]["bucket"]["start"]),
        )[0][0]
        for item in document["classes"]:
            number += 1
            if number % 3 == 0:  # back to the JSON form
                older = rows.pack({key: item[key] for key in rows.CLASS_KEYS if key in item})
            elif number % 3 == 1:  # back to version 1
                older = rows.STATE_V1 + zlib.compress(
                    marshal.dumps(rows._load(rows.encode_class(item)), 4)
                )
            else:
                continue
            store.run(
                "UPDATE history_classes SET state = ? WHERE host = ? AND start = ? AND class_id = ?",
                (older, "db1", start, item["id"]),
            )
    assert len(buckets) >= 2
    kinds = {bytes(s)[:1] for (s,) in store.run("SELECT state FROM history_classes")}
    assert kinds == {rows.STATE_V1, rows.STATE_V2, b"\x78"}
    assert full_document(store.digest(*WIDE)) == current


def test_a_binary_state_unpacks_as_its_document_parts(buckets: tuple[dict[str, Any], ...]) -> None:
    """Readers of one state (govern/history/figures.py) get the older JSON form's keys and
    values for what they read: fingerprint, sample, the metrics' figures and sketches."""
    for item in buckets[0]["classes"]:
        older = rows.unpack(rows.pack({k: item[k] for k in rows.CLASS_KEYS if k in item}))
        binary = rows.unpack(rows.encode_class(item))
        for key in ("id", "fingerprint", "count", "first_seen", "last_seen", "sample"):
            assert binary[key] == older[key], key
        assert binary["state"]["metrics"] == older["state"]["metrics"]
        assert binary["state"].get("sample_query_time") == older["state"].get("sample_query_time")


def test_a_bucket_written_twice_is_one_bucket(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    document = at(buckets[0], "db1", f"{DAY} 10:00:00")
    store.write("db1", f"{DAY} 10:00:00", document)
    rows = _count(store, "history_classes")
    store.write("db1", f"{DAY} 10:00:00", document)
    assert _count(store, "history_classes") == rows == len(document["classes"])
    assert _count(store, "history_buckets") == 1
    assert store.report(*WIDE).events == document["totals"]["events"]
    # a rewrite with other content replaces the bucket: the report follows the new one
    other = at(buckets[1], "db1", f"{DAY} 10:00:00")
    store.write("db1", f"{DAY} 10:00:00", other)
    assert store.report(*WIDE).events == other["totals"]["events"]


def test_a_full_day_reads_the_same_before_and_after_its_roll_ups(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    for hour in range(24):
        for host, document in (("db1", buckets[0]), ("db2", buckets[hour % 2])):
            start = f"{DAY} {hour:02d}:00:00"
            store.write(host, start, at(document, host, start))
    day = (dt.datetime(2026, 11, 20), dt.datetime(2026, 11, 21))
    hourly = full_document(store.digest(*day))
    one = full_document(store.digest(*day, host="db2"))
    rolled = store.roll_up(dt.datetime(2026, 11, 22))
    assert (rolled.days, rolled.fleet_days) == (2, 1)
    assert _count(store, "history_fleet_classes") == len(hourly["classes"])
    # roll-ups keep their states without zlib (version 3), buckets compressed (version 2)
    for table, kind in (("history_day_classes", rows.STATE_V3),
                        ("history_fleet_classes", rows.STATE_V3),
                        ("history_classes", rows.STATE_V2)):  # fmt: skip
        assert {bytes(s)[:1] for (s,) in store.run(f"SELECT state FROM {table}")} == {kind}
    fleet = full_document(store.digest(*day))  # read from the fleet's day roll-up
    assert_same_events(fleet, hourly)
    assert [c["top_hosts"] for c in fleet["classes"]] == [c["top_hosts"] for c in hourly["classes"]]
    assert_same_events(full_document(store.digest(*day, host="db2")), one)  # the host's day
    # the day's figures equal the merge of its 24 hours: 24 times one bucket for db1
    first = hourly["classes"][0]
    shares = {share["host"]: share["count"] for share in first["top_hosts"]}
    single = next(c for c in buckets[0]["classes"] if c["id"] == first["id"])
    assert shares["db1"] == 24 * single["count"]
    # a bucket written after the roll-up makes the day stale: read from the buckets again
    late = at(buckets[1], "db1", f"{DAY} 05:00:00")
    store.write("db1", f"{DAY} 05:00:00", late)
    assert store.run("SELECT stale FROM history_days WHERE host = 'db1'")[0][0] == 1
    after = store.report(*day)
    expected = (
        hourly["totals"]["events"] - buckets[0]["totals"]["events"] + late["totals"]["events"]
    )
    assert after.events == expected
    assert store.roll_up(dt.datetime(2026, 11, 22)).days == 1
    assert store.report(*day).events == expected


def test_retention_keeps_roll_ups_and_drops_old_days(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    for day in ("2026-11-01", "2026-11-20"):
        for hour in (3, 4):
            start = f"{day} {hour:02d}:00:00"
            store.write("db1", start, at(buckets[0], "db1", start))
    store.roll_up(dt.datetime(2026, 11, 25))
    before = full_document(store.digest(*WIDE))
    done = store.retain(dt.datetime(2026, 11, 25), hourly_days=3, keep_days=400)
    assert done.hourly_days == 2
    assert _count(store, "history_buckets") == 0
    assert _count(store, "history_fleet_hours") == 0  # the fleet's hours go with the buckets
    assert _count(store, "history_host_hour_blocks") == 0  # and the host's, with its day's
    assert _count(store, "history_host_hours") == 0
    assert_same_events(full_document(store.digest(*WIDE)), before)
    # a bucket for a day whose buckets were dropped is refused, not counted twice
    where = store.write("db1", "2026-11-20 03:00:00", at(buckets[0], "db1", "2026-11-20 03:00:00"))
    assert "skipped" in where
    assert _count(store, "history_buckets") == 0
    done = store.retain(dt.datetime(2026, 11, 25), hourly_days=3, keep_days=10)
    assert done.days == 1
    assert store.hosts(*WIDE) == ["db1"]
    assert store.report(*WIDE).events == buckets[0]["totals"]["events"] * 2


def test_fleet_hours_go_with_the_last_hosts_buckets_of_their_day(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    """A host whose old day is not pruned yet (stale: a bucket came after its roll-up) keeps
    the fleet's hours of that day; a later write to it bumps its hour's row, not one beside
    hours with buckets and no row. Once the last host's buckets of the day go, its hours go."""
    day = "2026-11-20"

    def hours_without_rows() -> set[str]:
        hours = {
            _text(start)[:13]
            for (start,) in store.run(
                "SELECT start FROM history_buckets WHERE start >= ? AND start < ?",
                (f"{day} 00:00:00", "2026-11-21 00:00:00"),
            )
        }
        return hours - {
            _text(s)[:13] for (s,) in store.run("SELECT start FROM history_fleet_hours")
        }

    for host in ("db1", "db2"):
        for hour in (3, 4):
            start = f"{day} {hour:02d}:00:00"
            store.write(host, start, at(buckets[0], host, start))
    store.roll_up(dt.datetime(2026, 11, 25))
    late = f"{day} 05:00:00"
    store.write("db2", late, at(buckets[0], "db2", late))  # db2's day stale again
    done = store.retain(dt.datetime(2026, 11, 25), hourly_days=3, keep_days=400)
    assert done.hourly_days == 1  # db1's day; db2's is stale
    assert _count(store, "history_fleet_hours") == 3
    assert hours_without_rows() == set()
    later = f"{day} 06:00:00"
    store.write("db2", later, at(buckets[0], "db2", later))
    assert hours_without_rows() == set()
    assert store.report(*WIDE).events == 6 * buckets[0]["totals"]["events"]
    store.roll_up(dt.datetime(2026, 11, 25))
    done = store.retain(dt.datetime(2026, 11, 25), hourly_days=3, keep_days=400)
    assert (done.hourly_days, _count(store, "history_buckets")) == (1, 0)
    assert _count(store, "history_fleet_hours") == 0  # the day's last buckets went
    assert _count(store, "history_fleet_hour_classes") == 0
    assert store.report(*WIDE).events == 6 * buckets[0]["totals"]["events"]


def test_series_merge_sketches_per_step(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    for hour in range(3):
        for host in ("db1", "db2"):
            start = f"{DAY} {hour:02d}:00:00"
            store.write(host, start, at(buckets[hour % 2], host, start))
    window = (dt.datetime(2026, 11, 20), dt.datetime(2026, 11, 20, 3))
    hourly = store.series(*window, step=3600, by_host=True)
    assert [(p.start.hour, p.host) for p in hourly] == [
        (h, name) for h in range(3) for name in ("db1", "db2")
    ]
    report = store.report(*window)
    assert sum(p.count for p in hourly) == report.events
    top = report.classes[0]
    (whole,) = store.series(*window, step=86400, class_id=top.id)
    assert whole.count == top.count
    assert whole.query_time == pytest.approx(top.total_time)
    assert (whole.p95, whole.p99) == (top.query_time.p95, top.query_time.p99)
    assert store.series(*window, step=3600, hosts="db2", class_id=top.id)[0].host is None


def test_hosts_glob_and_one_host(store: SqlStore, buckets: tuple[dict[str, Any], ...]) -> None:
    for host in ("db1", "db2", "web1"):
        store.write(host, f"{DAY} 01:00:00", at(buckets[0], host, f"{DAY} 01:00:00"))
    assert store.hosts(*WIDE) == ["db1", "db2", "web1"]
    assert store.hosts(*WIDE, "db*") == ["db1", "db2"]
    report = store.report(*WIDE, hosts="db*")
    assert report.events == 2 * buckets[0]["totals"]["events"]
    assert {s.host for s in report.classes[0].top_hosts} == {"db1", "db2"}
    assert store.report(*WIDE, host="web1").events == buckets[0]["totals"]["events"]
    assert store.report(*WIDE, host="db").events == 0


def test_migrations_from_empty_and_from_version_1(
    tmp_path: Path, request: pytest.FixtureRequest, buckets: tuple[dict[str, Any], ...]
) -> None:
    names = [m.id for m in MIGRATIONS]
    old = SqliteStore(tmp_path / "v1.db", migrations=MIGRATIONS[:1])
    assert old.applied_migrations() == names[:1]
    old.write = None  # type: ignore[assignment,method-assign]  # version 1 had no roll-ups
    _write_v1(old, "db1", f"{DAY} 01:00:00", _rows(buckets[0]))
    old.close()
    store = SqliteStore(tmp_path / "v1.db")
    assert store.applied_migrations() == names
    assert store.report(*WIDE).events == buckets[0]["totals"]["events"]
    # the migrations marked its day, and its hour as never to be rolled up (read from buckets)
    assert store.run("SELECT start, stale FROM history_fleet_hours") == [(f"{DAY} 01:00:00", 2)]
    assert store.run("SELECT host, start, stale FROM history_host_hours") == [
        ("db1", f"{DAY} 01:00:00", 2)
    ]
    # its class rows lack the percentile columns: the collector's backfill gives them
    assert store.run("SELECT name, done FROM history_backfill ORDER BY name") == [
        ("history_classes", 0),
        ("history_day_classes", 1),
    ]
    assert store.run("SELECT COUNT(*) FROM history_classes WHERE explained IS NULL") != [(0,)]
    assert store.backfill() > 0
    assert store.run("SELECT COUNT(*) FROM history_classes WHERE explained IS NULL") == [(0,)]
    assert store.run("SELECT done FROM history_backfill") == [(1,), (1,)]
    done = store.roll_up(dt.datetime(2026, 11, 25))
    assert (done.days, done.fleet_hours) == (1, 0)
    assert store.report(*WIDE).events == buckets[0]["totals"]["events"]
    store.close()
    fresh = SqliteStore(tmp_path / "new.db")
    assert fresh.applied_migrations() == names
    assert fresh.run("SELECT done FROM history_backfill") == [(1,), (1,)]
    assert fresh.migrate() == []
    fresh.close()


def _write_v1(store: Any, host: str, start: str, rows: Any) -> None:
    """A bucket as version 1 wrote it (its columns only)."""
    store.run(
        "INSERT INTO history_buckets (host, start, seconds, events, query_time, qt_sketch, meta,"
        " written_at) VALUES (?, ?, 3600, ?, ?, ?, ?, ?)",
        (host, start, rows.events, rows.query_time, rows.qt_sketch, rows.meta, start),
    )
    for c in rows.classes:
        store.run(
            "INSERT INTO history_classes (host, start, class_id, count, query_time, qt_max,"
            " qt_sketch, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (host, start, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state),
        )


def _rows(document: dict[str, Any]) -> Any:
    from govern.history.rows import bucket_rows

    return bucket_rows(document)


def test_mysql_migrations_from_version_1(
    server: MariaDB, buckets: tuple[dict[str, Any], ...]
) -> None:
    url = mysql_url(server)
    old = MysqlStore.open(url, migrations=MIGRATIONS[:1])
    try:
        with old._transaction():
            _write_v1(old, "db1", f"{DAY} 01:00:00", _rows(buckets[0]))
        old.close()
        store = MysqlStore.open(url)
        assert store.applied_migrations() == [m.id for m in MIGRATIONS]
        assert store.report(*WIDE).events == buckets[0]["totals"]["events"]
        assert [
            (_text(a), b) for a, b in store.run("SELECT start, stale FROM history_fleet_hours")
        ] == [(f"{DAY} 01:00:00", 2)]
        assert store.roll_up(dt.datetime(2026, 11, 25)).days == 1
    finally:
        store = MysqlStore.open(url)
        store.run(f"DROP DATABASE `{store.target.schema}`")
        store.close()


def test_sqlite_file_is_private(tmp_path: Path) -> None:
    store = open_store(f"sqlite:{tmp_path}/a/history.db")
    store.close()
    assert (tmp_path / "a" / "history.db").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o700


WRITER = """
import json, sys
from govern.history.store import open_store
from tests.history.support import at
store = open_store(sys.argv[1])
document = json.load(open(sys.argv[2]))
for round in range(int(sys.argv[4])):
    for hour in range(6):
        start = f"2026-11-20 {hour:02d}:00:00"
        store.write(sys.argv[3], start, at(document, sys.argv[3], start))
        store.write("shared", start, at(document, "shared", start))
store.close()
"""


def test_two_writer_processes_at_once(
    store: SqlStore, buckets: tuple[dict[str, Any], ...], tmp_path: Path
) -> None:
    path = tmp_path / "bucket.json"
    path.write_text(json.dumps(buckets[1]))
    url = store.url
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(path), name, "3"],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=300)
        assert writer.returncode == 0, errors
    # each (host, hour) once, though "shared" was written 6 times per hour by two processes
    assert _count(store, "history_buckets") == 3 * 6
    assert store.report(*WIDE).events == 3 * 6 * buckets[1]["totals"]["events"]
    assert _count(store, "history_classes") == 3 * 6 * len(buckets[1]["classes"])


def _binlog_position(server: MariaDB) -> tuple[str, int]:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        name, position = cur.fetchone()[:2]
    conn.close()
    return str(name), int(position)


def test_nothing_reaches_the_binlog_unless_asked(
    server: MariaDB, buckets: tuple[dict[str, Any], ...]
) -> None:
    url = mysql_url(server)
    before = _binlog_position(server)
    store = MysqlStore.open(url)  # creates the schema and its tables
    store.write("db1", f"{DAY} 01:00:00", at(buckets[0], "db1", f"{DAY} 01:00:00"))
    store.roll_up(dt.datetime(2026, 11, 25))
    store.retain(dt.datetime(2026, 11, 25), hourly_days=1)
    store.close()
    assert _binlog_position(server) == before
    logged = MysqlStore.open(url + "&binlog=on")
    logged.write("db1", f"{DAY} 02:00:00", at(buckets[0], "db1", f"{DAY} 02:00:00"))
    assert _binlog_position(server) != before
    logged.run(f"DROP DATABASE `{logged.target.schema}`")
    logged.close()


def test_an_account_that_cannot_skip_the_binlog_is_told_how(server: MariaDB) -> None:
    url = mysql_url(server).replace("govern_admin", "govern_app")
    with pytest.raises(ServerError, match="binlog=on"):
        MysqlStore.open(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:secret@db1/h", "a password in the URL"),
        ("mysql://db1/", "name the schema"),
        ("mysql://db1/h?pw=1", "unknown parameter 'pw'"),
        ("mysql://db1/h?binlog=maybe", "binlog=maybe"),
        ("postgres://db1/h", "expected sqlite:PATH or mysql://"),
    ],
)
def test_bad_urls_are_usage_errors(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        if url.startswith("mysql"):
            parse_url(url)
        else:
            open_store(url)


def test_fleet_blocks_of_days_read_the_same_as_their_days(
    store: SqlStore, buckets: tuple[dict[str, Any], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = dt.datetime(2026, 10, 1)  # day number 20362: blocks of 2 start on even days
    for offset in range(11):
        day = (first + dt.timedelta(days=offset)).date().isoformat()
        for host in ("db1", "db2"):
            start = f"{day} 0{offset % 3}:00:00"
            store.write(host, start, at(buckets[(offset + len(host)) % 2], host, start))
    window = (first, first + dt.timedelta(days=11))
    hourly = full_document(store.digest(*window))
    one = full_document(store.digest(*window, host="db2"))
    done = store.roll_up(dt.datetime(2026, 10, 20))
    assert (done.days, done.fleet_days) == (22, 11)
    assert done.blocks >= 6  # blocks of 2, 4 and 8 days over the 11 days
    read: list[tuple[str, int]] = []
    original = SqlStore._block_unit

    def spy(self: SqlStore, ladder: Ladder, start: int, span: int, shares: Any) -> Any:
        if ladder.host is None:
            read.append((ladder.key(start), span))
        return original(self, ladder, start, span, shares)

    monkeypatch.setattr(SqlStore, "_block_unit", spy)
    blocked = full_document(store.digest(*window))
    assert_same_events(blocked, hourly)
    assert [c["top_hosts"] for c in blocked["classes"]] == [
        c["top_hosts"] for c in hourly["classes"]
    ]
    assert read and all(span > 1 for _, span in read)
    assert sum(span for _, span in read) >= 8
    # one host (not the fleet) reads its own blocks of days
    hosts: list[tuple[str, int]] = []
    monkeypatch.setattr(
        SqlStore,
        "_block_unit",
        lambda self, ladder, start, span, shares: (
            hosts.append((ladder.host, span)) or original(self, ladder, start, span, shares)
        ),
    )
    assert_same_events(full_document(store.digest(*window, host="db2")), one)
    assert sum(span for _, span in hosts) >= 8 and {name for name, _ in hosts} == {"db2"}
    monkeypatch.setattr(SqlStore, "_block_unit", spy)
    # a late bucket on the 4th day invalidates the blocks over it until the next roll-up
    start = "2026-10-04 05:00:00"
    store.write("db1", start, at(buckets[0], "db1", start))
    read.clear()
    after = store.report(*window)
    assert after.events == hourly["totals"]["events"] + buckets[0]["totals"]["events"]
    assert all(not (day <= "2026-10-04" < _end(day, span)) for day, span in read)
    store.roll_up(dt.datetime(2026, 10, 20))
    read.clear()
    assert store.report(*window).events == after.events
    assert any(day <= "2026-10-04" < _end(day, span) for day, span in read)


def test_fleet_hours_read_the_same_as_their_buckets(
    store: SqlStore, buckets: tuple[dict[str, Any], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    nxt = "2026-11-21"
    for day, hours in ((DAY, 24), (nxt, 6)):
        for hour in range(hours):
            for host, document in (("db1", buckets[0]), ("db2", buckets[hour % 2])):
                start = f"{day} {hour:02d}:00:00"
                store.write(host, start, at(document, host, start))
    edges = (dt.datetime(2026, 11, 20, 9, 30), dt.datetime(2026, 11, 21, 4))  # cuts both days
    whole = (dt.datetime(2026, 11, 20), dt.datetime(2026, 11, 21))
    hourly = full_document(store.digest(*edges))
    hourly_day = full_document(store.digest(*whole))
    one = {host: full_document(store.digest(*edges, host=host)) for host in ("db1", "db2")}
    done = store.roll_up(dt.datetime(2026, 11, 21, 6))
    # every hour that ended: 05:00 of the 21st too, as both hosts wrote it
    assert (done.days, done.fleet_days, done.fleet_hours) == (2, 1, 30)
    read: list[str] = []
    for name in ("_bucket_units", "_fleet_hour_unit", "_fleet_unit", "_day_unit", "_block_unit"):
        original = getattr(SqlStore, name)

        def spy(self: SqlStore, *args: Any, _name: str = name, _original: Any = original) -> Any:
            if _name == "_bucket_units":  # (the gap 09:30-10:00 has no bucket)
                units = list(_original(self, *args))
                read.extend([f"buckets {args[1]}"] if units else [])
                return iter(units)
            if _name == "_block_unit":
                read.append(f"{args[0].units} {args[0].key(args[1])} x{args[2]}")
            else:
                read.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(SqlStore, name, spy)
    blocks = [
        f"history_fleet_hours {DAY} 10:00:00 x2",
        f"history_fleet_hours {DAY} 12:00:00 x4",
        f"history_fleet_hours {DAY} 16:00:00 x8",
        f"history_fleet_hours {nxt} 00:00:00 x4",
    ]
    rolled = full_document(store.digest(*edges))
    assert read == blocks  # 10:00-23:00 and 00:00-03:00 in 4 blocks of hours: no bucket read
    assert_same_events(rolled, hourly)
    assert [c["top_hosts"] for c in rolled["classes"]] == [
        c["top_hosts"] for c in hourly["classes"]
    ]
    read.clear()
    assert_same_events(full_document(store.digest(*whole)), hourly_day)
    assert read == ["_fleet_unit"]  # a fresh fleet day beats its hours
    read.clear()
    # one host: never the fleet's hours, its own blocks of hours (the same 4 blocks)
    assert_same_events(full_document(store.digest(*edges, host="db2")), one["db2"])
    mine = [b.replace("fleet_hours", "host_hours") for b in blocks]
    assert read == mine
    # a late bucket in the window makes its hour stale: that hour alone from the buckets
    late = at(buckets[1], "db1", f"{DAY} 12:00:00")
    store.write("db1", f"{DAY} 12:00:00", late)
    expected = (
        hourly["totals"]["events"] - buckets[0]["totals"]["events"] + late["totals"]["events"]
    )
    read.clear()
    assert store.report(*edges).events == expected
    assert (
        read
        == [
            blocks[0],
            "_fleet_hour_unit",  # 13:00
            f"history_fleet_hours {DAY} 14:00:00 x2",
            *blocks[2:],
            *[f"buckets {DAY} 12:00:00"] * 2,  # 12:00 of both hosts
        ]
    )
    # one host reads that hour (and 13:00, alone in its block of 2) from its buckets
    read.clear()
    events = one["db1"]["totals"]["events"] - buckets[0]["totals"]["events"]
    assert store.report(*edges, host="db1").events == events + late["totals"]["events"]
    # in time order
    assert read == [mine[0], f"buckets {DAY} 12:00:00", f"history_host_hours {DAY} 14:00:00 x2",
                    *mine[2:]]  # fmt: skip
    # the day is stale too: read from db2's day roll-up and db1's buckets, not the hours
    read.clear()
    day_events = hourly_day["totals"]["events"] - buckets[0]["totals"]["events"]
    assert store.report(*whole).events == day_events + late["totals"]["events"]
    assert "_fleet_hour_unit" not in read and "_day_unit" in read
    done = store.roll_up(dt.datetime(2026, 11, 21, 6))
    assert (done.days, done.fleet_days, done.fleet_hours) == (1, 1, 1)
    read.clear()
    after = full_document(store.digest(*edges))
    assert read == blocks
    assert after["totals"]["events"] == expected
    read.clear()  # db1's hour rolled up again: its blocks rebuilt, equal to its buckets
    rebuilt = full_document(store.digest(*edges, host="db1"))
    assert read == mine
    assert rebuilt["totals"]["events"] == events + late["totals"]["events"]
    # an hour that ended but that a host has not written yet waits for it (or 15 minutes)
    six = f"{nxt} 06:00:00"
    store.write("db1", six, at(buckets[0], "db1", six))
    assert store.roll_up(dt.datetime(2026, 11, 21, 7, 5)).fleet_hours == 0
    store.write("db2", six, at(buckets[0], "db2", six))
    assert store.roll_up(dt.datetime(2026, 11, 21, 7, 5)).fleet_hours == 1
    # the re-rolled hour equals the merge of its buckets
    store.run("UPDATE history_fleet_hours SET stale = 1 WHERE start = ?", (f"{DAY} 12:00:00",))
    assert_same_events(full_document(store.digest(*edges)), after)


def test_one_roll_up_of_a_fleet_hour_at_a_time(
    store: SqlStore, buckets: tuple[dict[str, Any], ...]
) -> None:
    start = f"{DAY} 01:00:00"
    for host in ("db1", "db2"):
        store.write(host, start, at(buckets[0], host, start))
    assert store._claim_hour(start) == 2  # another collector is rolling it up
    assert store._claim_hour(start) is None
    assert store.roll_up(dt.datetime(2026, 11, 25)).fleet_hours == 0
    # a claim older than CLAIM_FOR is taken over (its collector died)
    store.run("UPDATE history_fleet_hours SET claimed_at = '2000-01-01 00:00:00'")
    assert store.roll_up(dt.datetime(2026, 11, 25)).fleet_hours == 1
    assert store.run("SELECT stale, claimed_at, hosts FROM history_fleet_hours") == [(0, None, 2)]


def _end(day: str, span: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=span)).isoformat()


FOREVER = """
import json, sys
from govern.history.store import open_store
from tests.history.support import at
store = open_store(sys.argv[1])
documents = [json.load(open(path)) for path in sys.argv[2:4]]
hour = 0
while True:
    start = f"2026-11-20 {hour % 24:02d}:00:00"
    store.write("db1", start, at(documents[hour % 2], "db1", start))
    print(hour, flush=True)
    hour += 1
"""


def test_a_writer_killed_mid_write_leaves_whole_buckets(
    store: SqlStore, buckets: tuple[dict[str, Any], ...], tmp_path: Path
) -> None:
    paths = []
    for index in (0, 1):
        paths.append(tmp_path / f"b{index}.json")
        paths[-1].write_text(json.dumps(buckets[index]))
    sizes = {len(buckets[0]["classes"]), len(buckets[1]["classes"])}
    for delay in (0.3, 0.9, 1.7):
        writer = subprocess.Popen(
            [sys.executable, "-c", FOREVER, store.url, *map(str, paths)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        writer.stdout.readline()  # it has written one bucket: kill it in a later one
        time.sleep(delay)
        writer.kill()
        writer.wait()
        per_bucket = store.run(
            "SELECT b.start, COUNT(c.class_id) FROM history_buckets b LEFT JOIN history_classes c"
            " ON c.host = b.host AND c.start = b.start GROUP BY b.start"
        )
        assert per_bucket and all(int(n) in sizes for _, n in per_bucket), per_bucket
        assert _count(store, "history_classes") == sum(int(n) for _, n in per_bucket)
    events = store.report(*WIDE).events
    expected = sum(
        buckets[int(start[11:13]) % 2]["totals"]["events"]
        for start in (str(row[0]) for row in store.run("SELECT start FROM history_buckets"))
    )
    assert events == expected
