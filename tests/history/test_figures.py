"""The store's lean figures (govern/history/figures.py) are the merged report's, class for
class: hourly buckets, day roll-ups, pruned days, one host and the fleet, on both backends;
and govern regressions finds on MariaDB what it finds on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from govern.digest.document import full_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_bytes
from govern.history import bounds
from govern.history.figures import (
    Figures,
    Pieces,
    StateReader,
    host_figures,
    hours_with_data,
    span_figures,
)
from govern.history.mysql import MysqlStore
from govern.history.regressions import find_regressions
from govern.history.sql import SqlStore
from govern.history.sqlite import SqliteStore
from govern.history.store import open_store
from tests.harness import MariaDB
from tests.history.generated import fill as fill_regressions
from tests.history.support import mysql_url

UNTIL = datetime(2026, 11, 27, 6, 0)
STATEMENTS = {
    # 29 events at 1.003 ms and one at 5 ms (every hour): p95 in the lowest bucket (1000-1003
    # µs, worth 1001 µs), so the exact minimum clamps it
    "SELECT name FROM users WHERE id = 7": [0.001003] * 29 + [0.005],
    "SELECT SUM(amount) FROM orders WHERE customer = 42": [0.004 * (1 + n / 50) for n in range(40)],
    "UPDATE carts SET n = n + 1 WHERE id = 3": [0.0002, 0.0009, 0.3],
}


def hour_log(at: datetime, shift: float) -> bytes:
    lines = [f"# Time: {at:%y%m%d %H:%M:%S}"]
    for index, (statement, times) in enumerate(STATEMENTS.items()):
        for seconds in times:
            seconds *= shift if index else 1
            lines += [
                "# User@Host: app[app] @ localhost []",
                "# Thread_id: 7  Schema: app  QC_hit: No",
                f"# Query_time: {seconds:.6f}  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1",
                f"SET timestamp={int(at.timestamp())};",
                f"{statement};",
            ]
    return ("\n".join(lines) + "\n").encode()


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


def fill(store: SqlStore) -> None:
    for index, host in enumerate(("db1", "db2")):
        for back in range(4 * 24, 0, -5):  # every fifth hour over four days
            at = UNTIL - timedelta(hours=back)
            document = full_document(
                digest_bytes(hour_log(at, 1 + index + back % 3), DigestOptions(host=host))
            )
            store.write(
                host, f"{at:%Y-%m-%d %H:%M:%S}", json.loads(json.dumps(document, default=list))
            )


def check(store: SqlStore, since: datetime, until: datetime) -> None:
    read = StateReader(store)
    # both hosts summed by the server in bulk (grouped by their fresh days), as
    # find_regressions reads them; bounds first, as judge asks them
    bulk = span_figures(store, StateReader(store), ["db1", "db2"], since, until)
    for host, figures in bulk.items():
        alone = host_figures(store, read, host, since, until)
        for cls in figures.classes:
            low, high = cls.percentile_bounds()
            exact = alone.by_id[cls.id].percentiles()
            for lowest, value, highest in zip(low, exact, high, strict=True):
                assert (
                    (lowest, highest) == (None, None)
                    if value is None
                    else (lowest is not None and highest is not None and lowest <= value <= highest)
                ), (cls.id, low, exact, high)
    # the fleet's bounds, from both hosts' rows before any sketch is read
    fresh = span_figures(store, StateReader(store), ["db1", "db2"], since, until)
    fleet = store.report(since, until)
    summed = Figures.summed(fresh.values(), StateReader(store)).by_id
    for cls in fleet.classes:
        low, high = summed[cls.id].percentile_bounds()
        for lowest, value, highest in zip(
            low, (cls.query_time.p95, cls.query_time.p99), high, strict=True
        ):
            assert value is None or (
                lowest is not None and highest is not None and lowest <= value <= highest
            ), (cls.id, low, value, high)
    parts = [bulk["db1"], bulk["db2"]]
    for figures, report in (
        (parts[0], store.report(since, until, host="db1")),
        (parts[1], store.report(since, until, host="db2")),
        (Figures.summed(parts, read), store.report(since, until)),
    ):
        mine = {cls.id: cls for cls in figures.classes}
        assert sorted(mine) == sorted(cls.id for cls in report.classes)
        for cls in report.classes:
            got = mine[cls.id]
            assert (got.count, got.total_time, got.fingerprint) == (
                cls.count,
                cls.total_time,
                cls.fingerprint,
            )
            assert (got.query_time.p95, got.query_time.p99) == (
                cls.query_time.p95,
                cls.query_time.p99,
            ), cls.fingerprint


def check_cut_days(store: SqlStore, since: datetime, until: datetime) -> None:
    """A day the span cuts, summed as its roll-up minus its other hours (``exact``): the
    same figures, whether its hours' rows are read up front (every class asked) or on
    first use (none asked), host by host and for the fleet."""
    hosts = ["db1", "db2"]
    read = StateReader(store)
    plain = span_figures(store, read, hosts, since, until)
    every = {host: set(plain[host].by_id) for host in hosts}
    # the window after the span sums its hours before midnight apart, and the span's last
    # day takes them off its roll-up instead of reading them again: the same figures
    pieces: Pieces = {}
    after = until + timedelta(hours=24)
    window = span_figures(store, StateReader(store), hosts, until, after, pieces=pieces)
    assert bool(pieces) == (until.hour > 12), sorted(pieces)
    alone = span_figures(store, read, hosts, until, after)
    for exact, kept in (({}, None), (every, None), (every, pieces), (None, None)):
        if exact is None:  # the window, its pieces summed apart, against one sum
            cut, want_all = window, alone
        else:
            cut = span_figures(
                store, StateReader(store), hosts, since, until, exact=exact, pieces=kept
            )
            want_all = plain
        pairs = [(want_all[host], cut[host]) for host in hosts]
        pairs.append((Figures.summed(want_all.values(), read), Figures.summed(cut.values(), read)))
        for want, got in pairs:
            assert sorted(want.by_id) == sorted(got.by_id)
            for cls in want.classes:
                mine = got.by_id[cls.id]
                low, high = mine.percentile_bounds()  # (from the buckets: nothing read yet)
                for lowest, value, highest in zip(low, cls.percentiles(), high, strict=True):
                    assert value is None or lowest <= value <= highest, cls.id  # type: ignore[operator]
                assert (mine.count, mine.micro, mine.qt_max, mine.keys, mine.any_explained) == (
                    cls.count,
                    cls.micro,
                    cls.qt_max,
                    cls.keys,
                    cls.any_explained,
                ), cls.id
                assert (mine.worst, mine.percentiles()) == (cls.worst, cls.percentiles())


def check_joined_texts_cut(store: MysqlStore, since: datetime, until: datetime) -> None:
    """The sums' joined texts cut by group_concat_max_len are read row by row instead:
    the same figures."""

    def figures() -> list[tuple[object, ...]]:
        found = span_figures(store, StateReader(store), ["db1", "db2"], since, until)
        return [
            (host, cls.id, cls.count, cls.micro, cls.qt_max, cls.keys, cls.any_explained)
            for host, part in sorted(found.items())
            for cls in part.classes
        ]

    whole = figures()
    connections = [store, store.twin()]
    for connection in connections:
        connection.run("SET SESSION group_concat_max_len = 20")
    try:
        assert figures() == whole
    finally:
        for connection in connections:
            connection.run("SET SESSION group_concat_max_len = 16777216")
    assert whole


def test_figures_are_the_merged_reports(store: SqlStore) -> None:
    fill(store)
    windows = [
        (UNTIL - timedelta(days=4), UNTIL),
        (UNTIL - timedelta(hours=30), UNTIL - timedelta(hours=3)),
        # cut days: 18 hours of the first day; 17 hours inside one day
        (UNTIL - timedelta(hours=75), UNTIL - timedelta(hours=58)),
    ]
    for since, until in windows:  # hourly buckets only
        check(store, since, until)
    store.roll_up(now=UNTIL)  # whole days from their roll-ups
    for since, until in windows:
        check(store, since, until)
        check_cut_days(store, since, until)
    if isinstance(store, MysqlStore):
        check_joined_texts_cut(store, *windows[0])
    # a bucket written late makes db1's day stale (read from its hours), db2's stays fresh
    late = UNTIL - timedelta(hours=50)
    document = full_document(digest_bytes(hour_log(late, 3), DigestOptions(host="db1")))
    store.write("db1", f"{late:%Y-%m-%d %H:%M:%S}", json.loads(json.dumps(document, default=list)))
    for since, until in windows:
        check(store, since, until)
        check_cut_days(store, since, until)
    store.roll_up(now=UNTIL)
    store.retain(now=UNTIL, hourly_days=2)  # older days' buckets dropped
    for since, until in windows:
        check(store, since, until)
    # rows written before migration 0008 (no bucket columns, no flag) are read the exact
    # way, and bounds.fill() gives them what a write gives
    written = store.run(
        "SELECT host, start, class_id, qt_p95_key, qt_p99_key, explained FROM history_classes"
    )
    assert written and all(row[5] is not None for row in written)
    for table in ("history_classes", "history_day_classes"):
        store.run(
            f"UPDATE {table} SET qt_p95_key = NULL, qt_p99_key = NULL, explained = NULL"
            " WHERE host = ?",
            ("db1",),
        )
    for since, until in windows:
        check(store, since, until)
    # what a collector does after each write: a bounded slice, resumed by the next call
    # (a clock that moves 0.1 s a look: a few buckets a call), newest buckets first
    store.run("UPDATE history_backfill SET bucket = NULL, host = NULL, done = 0")
    stripped = sum(
        int(store.run(f"SELECT COUNT(*) FROM {table} WHERE explained IS NULL")[0][0])
        for table in ("history_classes", "history_day_classes")
    )
    ticks = iter(range(1_000_000))
    calls, filled = 0, []
    while store.run("SELECT 1 FROM history_backfill WHERE done = 0"):
        filled.append(bounds.backfill(store, 0.35, clock=lambda: next(ticks) / 10))
        calls += 1
        assert calls < 200
    assert calls > 3 and sum(filled) == stripped > 0, filled
    assert sorted(
        store.run(
            "SELECT host, start, class_id, qt_p95_key, qt_p99_key, explained FROM history_classes"
        )
    ) == sorted(written)
    assert bounds.backfill(store) == 0  # done: one lookup
    for table in ("history_classes", "history_day_classes"):
        store.run(
            f"UPDATE {table} SET qt_p95_key = NULL, qt_p99_key = NULL, explained = NULL"
            " WHERE host = ?",
            ("db1",),
        )
    assert bounds.fill(store) > 0
    assert sorted(
        store.run(
            "SELECT host, start, class_id, qt_p95_key, qt_p99_key, explained FROM history_classes"
        )
    ) == sorted(written)
    assert bounds.fill(store) == 0
    for since, until in windows:
        check(store, since, until)
    # the hours with data are those series() counts, per host and fleet-wide
    since = UNTIL - timedelta(days=4)
    hours = hours_with_data(store, since, UNTIL, ["db1", "db2"])
    for host in ("db1", "db2", None):
        points = store.series(since, UNTIL, step=3600, host=host)
        assert hours[host] == {p.start for p in points if p.count}


def test_mariadb_finds_what_sqlite_finds(server: MariaDB, tmp_path: Path) -> None:
    outcomes = []
    for url in (f"sqlite:{tmp_path / 'history.db'}", mysql_url(server)):
        fill_regressions(url, slowed={"db2"}, new_on={"db1"})
        store = open_store(url)
        try:
            outcome = find_regressions(
                store, baseline=timedelta(days=7), window=timedelta(hours=24), until=UNTIL
            ).to_json()
            if isinstance(store, MysqlStore):
                store.run(f"DROP DATABASE `{store.target.schema}`")
        finally:
            store.close()
        outcomes.append(outcome | {"store": None})
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["counts"]["regressions"] == 2, outcomes[0]
