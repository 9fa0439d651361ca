"""The store's one schema and everything it does, for both backends (SQLite and MySQL).

Tables (docs/design/history.md, "Schema"):

* ``history_buckets`` / ``history_classes``: what collectors wrote, one row per (host,
  bucket start) and per (host, start, class ID). Writing a bucket replaces its rows in
  one transaction, so a bucket written twice is one bucket.
* ``history_days`` / ``history_day_classes``: a host's day rolled up (the exact merge of
  its buckets); ``stale`` and ``version`` say whether a write came after the roll-up.
* ``history_fleet_days`` / ``history_fleet_classes``: every host's day merged, each class
  with every host's count and time (``hosts``): a fleet report of a week reads 7 rows a
  class instead of 50 × 168.

* ``history_fleet_hours`` / ``history_fleet_hour_classes``: every host's buckets of an hour
  merged, each class with every host's count and time: the edges of a window that cuts days.
* blocks of 2 to 64 days (the fleet's, each host's) and of 2 to 8 hours (the fleet's),
  each the merge of its halves (govern/history/ladders.py).

A report of every host reads the fleet's blocks and days for whole days, the fleet's blocks
of hours and hours for the rest; then each host its blocks and days for the whole days left,
and its buckets for what is still left (docs/design/history.md, "Roll-ups").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from govern import sketch
from govern.digest.document import full_document
from govern.digest.report import HostShare, Report
from govern.digest.result import Digest
from govern.errors import UsageError
from govern.history.bounds import BUDGET as BACKFILL_BUDGET
from govern.history.bounds import COLUMNS as BOUND_COLUMNS
from govern.history.bounds import backfill, row_figures
from govern.history.ladders import (
    FLEET_DAYS,
    FLEET_HOURS,
    HOST_DAYS,
    HOST_HOURS,
    Ladder,
    to_build,
    valid,
    walk,
)
from govern.history.merging import Merger, no_collection
from govern.history.model import TOP_HOSTS, Point
from govern.history.prefetch import prefetched
from govern.history.rows import (
    BucketRows,
    bucket_rows,
    digest_rows,
    merged_sketch,
    pack,
    unpack,
)

FORMAT = "%Y-%m-%d %H:%M:%S"
DAY = 86400
#: A day is rolled up once it ended this long ago (buckets close minutes after their end).
ROLL_UP_AFTER = 3600
#: A fleet hour is rolled up once it ended this long ago (collect closes a bucket 5 minutes
#: after its end by default; a bucket arriving later marks the hour stale again).
HOUR_ROLL_UP_AFTER = 900
#: A claim on a fleet hour's roll-up is taken over after this (its collector died).
CLAIM_FOR = dt.timedelta(minutes=10)
#: Rows inserted per statement.
BATCH = 500


@dataclass(frozen=True)
class Migration:
    """A named step of the schema: SQL per dialect ("sqlite", "mysql"), ``;``-separated."""

    id: str
    sql: dict[str, str]


def _tables(blob: str, text: str, day: str, stamp: str, engine: str) -> str:
    return f"""
    CREATE TABLE history_buckets (
        host       VARCHAR(255) NOT NULL,
        start      {stamp} NOT NULL,
        seconds    INT NOT NULL,
        events     BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_sketch  {blob},
        meta       {blob} NOT NULL,
        written_at {stamp} NOT NULL,
        PRIMARY KEY (host, start)
    ){engine};
    CREATE INDEX history_buckets_by_start ON history_buckets (start);
    CREATE TABLE history_classes (
        host       VARCHAR(255) NOT NULL,
        start      {stamp} NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        PRIMARY KEY (host, start, class_id)
    ){engine}
    """


def _roll_ups(blob: str, text: str, day: str, stamp: str, engine: str) -> str:
    return f"""
    CREATE TABLE history_days (
        host       VARCHAR(255) NOT NULL,
        day        {day} NOT NULL,
        stale      INT NOT NULL DEFAULT 1,
        version    BIGINT NOT NULL DEFAULT 1,
        pruned     INT NOT NULL DEFAULT 0,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob},
        rolled_at  {stamp},
        PRIMARY KEY (host, day)
    ){engine};
    CREATE INDEX history_days_by_day ON history_days (day);
    CREATE TABLE history_day_classes (
        host       VARCHAR(255) NOT NULL,
        day        {day} NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        PRIMARY KEY (host, day, class_id)
    ){engine};
    CREATE TABLE history_fleet_days (
        day        {day} NOT NULL PRIMARY KEY,
        stale      INT NOT NULL DEFAULT 1,
        version    BIGINT NOT NULL DEFAULT 1,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob},
        hosts      INT,
        rolled_at  {stamp}
    ){engine};
    CREATE TABLE history_fleet_classes (
        day        {day} NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        hosts      {blob} NOT NULL,
        PRIMARY KEY (day, class_id)
    ){engine}
    """


def _blocks(blob: str, text: str, day: str, stamp: str, engine: str) -> str:
    return f"""
    CREATE TABLE history_fleet_blocks (
        day        {day} NOT NULL,
        span       INT NOT NULL,
        versions   BIGINT NOT NULL,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob} NOT NULL,
        rolled_at  {stamp},
        PRIMARY KEY (day, span)
    ){engine};
    CREATE TABLE history_fleet_block_classes (
        day        {day} NOT NULL,
        span       INT NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        hosts      {blob} NOT NULL,
        PRIMARY KEY (day, span, class_id)
    ){engine}
    """


def _fleet_hours(blob: str, text: str, day: str, stamp: str, engine: str) -> str:
    return f"""
    CREATE TABLE history_fleet_hours (
        start      {stamp} NOT NULL PRIMARY KEY,
        stale      INT NOT NULL DEFAULT 1,
        version    BIGINT NOT NULL DEFAULT 1,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob},
        hosts      INT,
        rolled_at  {stamp},
        claimed_at {stamp}
    ){engine};
    CREATE TABLE history_fleet_hour_classes (
        start      {stamp} NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        hosts      {blob} NOT NULL,
        PRIMARY KEY (start, class_id)
    ){engine};
    CREATE TABLE history_fleet_hour_blocks (
        start      {stamp} NOT NULL,
        span       INT NOT NULL,
        versions   BIGINT NOT NULL,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob} NOT NULL,
        rolled_at  {stamp},
        PRIMARY KEY (start, span)
    ){engine};
    CREATE TABLE history_fleet_hour_block_classes (
        start      {stamp} NOT NULL,
        span       INT NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        hosts      {blob} NOT NULL,
        PRIMARY KEY (start, span, class_id)
    ){engine};
    CREATE TABLE history_host_blocks (
        host       VARCHAR(255) NOT NULL,
        day        {day} NOT NULL,
        span       INT NOT NULL,
        versions   BIGINT NOT NULL,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob} NOT NULL,
        rolled_at  {stamp},
        PRIMARY KEY (host, day, span)
    ){engine};
    CREATE TABLE history_host_block_classes (
        host       VARCHAR(255) NOT NULL,
        day        {day} NOT NULL,
        span       INT NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        PRIMARY KEY (host, day, span, class_id)
    ){engine}
    """


def _host_hours(blob: str, text: str, day: str, stamp: str, engine: str) -> str:
    return f"""
    CREATE TABLE history_host_hours (
        host       VARCHAR(255) NOT NULL,
        start      {stamp} NOT NULL,
        stale      INT NOT NULL DEFAULT 1,
        version    BIGINT NOT NULL DEFAULT 1,
        meta       {blob},
        rolled_at  {stamp},
        PRIMARY KEY (host, start)
    ){engine};
    CREATE TABLE history_host_hour_blocks (
        host       VARCHAR(255) NOT NULL,
        start      {stamp} NOT NULL,
        span       INT NOT NULL,
        versions   BIGINT NOT NULL,
        events     BIGINT,
        query_time BIGINT,
        qt_sketch  {blob},
        meta       {blob} NOT NULL,
        rolled_at  {stamp},
        PRIMARY KEY (host, start, span)
    ){engine};
    CREATE TABLE history_host_hour_block_classes (
        host       VARCHAR(255) NOT NULL,
        start      {stamp} NOT NULL,
        span       INT NOT NULL,
        class_id   {text} NOT NULL,
        count      BIGINT NOT NULL,
        query_time BIGINT NOT NULL,
        qt_max     BIGINT NOT NULL,
        qt_sketch  {blob},
        state      {blob} NOT NULL,
        PRIMARY KEY (host, start, span, class_id)
    ){engine}
    """


_SQLITE = {"blob": "BLOB", "text": "TEXT", "day": "TEXT", "stamp": "TEXT", "engine": ""}
_MYSQL = {
    "blob": "MEDIUMBLOB",
    "text": "CHAR(32) CHARACTER SET ascii",
    "day": "DATE",
    "stamp": "DATETIME",
    "engine": " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
}

_BOUNDS_TABLES = (("history_classes", "host, start"), ("history_day_classes", "host, day"))
_BOUNDED = "class_id, count, query_time, qt_max, qt_p95_key, qt_p99_key, explained"

MIGRATIONS = [
    Migration("history_0001_buckets", {"sqlite": _tables(**_SQLITE), "mysql": _tables(**_MYSQL)}),
    Migration(
        "history_0002_roll_ups",
        {
            "sqlite": _roll_ups(**_SQLITE)
            + """;
            INSERT INTO history_days (host, day)
                SELECT DISTINCT host, substr(start, 1, 10) FROM history_buckets;
            INSERT INTO history_fleet_days (day)
                SELECT DISTINCT substr(start, 1, 10) FROM history_buckets
            """,
            "mysql": _roll_ups(**_MYSQL)
            + """;
            INSERT INTO history_days (host, day)
                SELECT DISTINCT host, DATE(start) FROM history_buckets;
            INSERT INTO history_fleet_days (day)
                SELECT DISTINCT DATE(start) FROM history_buckets
            """,
        },
    ),
    Migration(
        "history_0003_fleet_blocks",
        {"sqlite": _blocks(**_SQLITE), "mysql": _blocks(**_MYSQL)},
    ),
    # series of one class (govern regressions, trends) read by class, not by host
    Migration(
        "history_0004_by_class",
        dict.fromkeys(
            ("sqlite", "mysql"),
            """
            CREATE INDEX history_classes_by_class ON history_classes (class_id, start);
            CREATE INDEX history_day_classes_by_class ON history_day_classes (class_id, day)
            """,
        ),
    ),
    # the fleet's hours and their blocks of 2-8 hours (the edges of a window that cuts days
    # read a few rows a class instead of one per host and hour), and each host's blocks of
    # 2-64 days (a host glob's week: 3 rows a host and class instead of 7). Hours written
    # before it get a row that is never rolled up (stale = 2): they are read from their
    # buckets, and no block of hours spans them.
    Migration(
        "history_0005_fleet_hours_host_blocks",
        {
            "sqlite": _fleet_hours(**_SQLITE)
            + """;
            INSERT INTO history_fleet_hours (start, stale)
                SELECT DISTINCT substr(start, 1, 13) || ':00:00', 2 FROM history_buckets
            """,
            "mysql": _fleet_hours(**_MYSQL)
            + """;
            INSERT INTO history_fleet_hours (start, stale)
                SELECT DISTINCT DATE_FORMAT(start, '%Y-%m-%d %H:00:00'), 2 FROM history_buckets
            """,
        },
    ),
    # govern regressions sums each class's figures over a span for many hosts: covering
    # indexes read ~60 bytes a row instead of the row with its state (~2.5 KB)
    Migration(
        "history_0006_class_figures",
        dict.fromkeys(
            ("sqlite", "mysql"),
            """
            CREATE INDEX history_classes_figures
                ON history_classes (host, start, class_id, count, query_time, qt_max);
            CREATE INDEX history_day_classes_figures
                ON history_day_classes (host, day, class_id, count, query_time, qt_max)
            """,
        ),
    ),
    # each host's blocks of 2-8 hours (a glob's or one host's edges: at most 5 rows a host
    # and class instead of one an hour). A host's hour is a row (its version bumped by every
    # write, as the fleet's); hours written before it get one never marked fresh (stale = 2),
    # so no block spans them: one row per host and hour with buckets (the bucket heads, a few
    # thousand rows at most after --keep-hourly), not a backfill of class rows.
    Migration(
        "history_0007_host_hours",
        {
            "sqlite": _host_hours(**_SQLITE)
            + """;
            INSERT INTO history_host_hours (host, start, stale)
                SELECT DISTINCT host, substr(start, 1, 13) || ':00:00', 2 FROM history_buckets
            """,
            "mysql": _host_hours(**_MYSQL)
            + """;
            INSERT INTO history_host_hours (host, start, stale)
                SELECT DISTINCT host, DATE_FORMAT(start, '%Y-%m-%d %H:00:00'), 2
                FROM history_buckets
            """,
        },
    ),
    # each class row's p95/p99 sketch buckets and whether its sample was explained
    # (bounds.py), in the covering indexes govern regressions sums: a steady class is left
    # out without reading its sketches, an unexplained one without reading its state.
    # Rows written before stay NULL (read the exact way) until bounds.backfill() (each
    # collector, after its writes) or bounds.fill() reaches them.
    Migration(
        "history_0008_row_bounds",
        {
            "sqlite": ";".join(
                f"""
                ALTER TABLE {table} ADD COLUMN qt_p95_key INT;
                ALTER TABLE {table} ADD COLUMN qt_p99_key INT;
                ALTER TABLE {table} ADD COLUMN explained INT;
                DROP INDEX {table}_figures;
                CREATE INDEX {table}_figures ON {table} ({column}, {_BOUNDED})
                """
                for table, column in _BOUNDS_TABLES
            ),
            "mysql": ";".join(
                f"""
                ALTER TABLE {table} ADD COLUMN qt_p95_key INT NULL,
                    ADD COLUMN qt_p99_key INT NULL, ADD COLUMN explained TINYINT NULL;
                ALTER TABLE {table} DROP INDEX {table}_figures,
                    ADD INDEX {table}_figures ({column}, {_BOUNDED})
                """
                for table, column in _BOUNDS_TABLES
            ),
        },
    ),
    # how far each collector's backfill of those columns got (bounds.backfill: the newest
    # bucket heads first, a bounded slice after each write): done at once in a store that
    # has no class row yet
    Migration(
        "history_0009_backfill",
        {
            dialect: f"""
            CREATE TABLE history_backfill (
                name   VARCHAR(64) NOT NULL PRIMARY KEY,
                bucket VARCHAR(19),
                host   VARCHAR(255),
                done   INT NOT NULL
            ){engine};
            """
            + ";".join(
                f"""
                INSERT INTO history_backfill (name, bucket, host, done)
                    SELECT '{table}', NULL, NULL,
                        CASE WHEN EXISTS (SELECT 1 FROM {table}) THEN 0 ELSE 1 END
                """
                for table, _ in _BOUNDS_TABLES
            )
            for dialect, engine in (("sqlite", ""), ("mysql", " ENGINE=InnoDB"))
        },
    ),
    # govern regressions reads a cut day's hours only for the few hundred classes it may
    # flag (their largest event, flags and percentile buckets): by (host, class), a few
    # entries a class instead of a scan of every class of the host's hours
    Migration(
        "history_0010_class_bounds",
        dict.fromkeys(
            ("sqlite", "mysql"),
            """
            CREATE INDEX history_classes_bounds ON history_classes
                (host, class_id, start, qt_max, explained, qt_p95_key, qt_p99_key)
            """,
        ),
    ),
]


@dataclass(frozen=True)
class RollUp:
    """What :meth:`SqlStore.roll_up` did."""

    days: int  # host-days rolled up
    fleet_days: int
    seconds: float
    blocks: int = 0  # blocks built: the fleet's and hosts' days, the fleet's hours
    fleet_hours: int = 0


@dataclass(frozen=True)
class Retained:
    """What :meth:`SqlStore.retain` removed."""

    hourly_days: int  # host-days whose buckets went (their roll-up stays)
    days: int  # days removed altogether


def stamp(moment: dt.datetime) -> str:
    return moment.strftime(FORMAT)


def _day_start(day: str) -> dt.datetime:
    return dt.datetime.strptime(day, "%Y-%m-%d")


_SECOND = dt.timedelta(seconds=1)


def _hour_of(moment: dt.datetime) -> dt.datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


#: What a host keeps per hour, dropped with its day's buckets (a host's hour row goes only
#: with them: an hour with buckets and no row would look empty to a block of hours).
_HOURLY = (
    "history_classes",
    "history_buckets",
    "history_host_hour_block_classes",
    "history_host_hour_blocks",
    "history_host_hours",
)


def _whole_hours(low: dt.datetime, high: dt.datetime) -> range:
    """The numbers of the hours inside [low, high)."""
    first = HOST_HOURS.number(stamp(low)) + (0 if low == _hour_of(low) else 1)
    return range(first, HOST_HOURS.number(stamp(high)))


def _gaps(
    since: dt.datetime, until: dt.datetime, spans: list[tuple[dt.datetime, dt.datetime]]
) -> list[tuple[dt.datetime, dt.datetime]]:
    """The parts of [since, until) outside ``spans`` (what a host's buckets must give)."""
    gaps = []
    cursor = since
    for low, high in sorted(spans):
        if cursor < low:
            gaps.append((cursor, min(low, until)))
        cursor = max(cursor, high)
    if cursor < until:
        gaps.append((cursor, until))
    return [(low, high) for low, high in gaps if low < high]


def _text(value: Any) -> str:
    """A DATE/DATETIME as the store's text (pymysql returns date objects)."""
    if isinstance(value, dt.datetime):
        return value.strftime(FORMAT)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _moment(value: Any) -> dt.datetime:
    """A stored DATE or DATETIME (text in SQLite, objects from pymysql) as a datetime."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    text = str(value)
    return _day_start(text) if len(text) == 10 else dt.datetime.strptime(text[:19], FORMAT)


class SqlStore:
    """The store over a DB-API connection; the backends say how to connect and quote."""

    url: str
    dialect: str  # "sqlite" or "mysql"
    param = "?"

    # --- what a backend provides ------------------------------------------------------
    def _execute(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    def _mark_stale(self, host: str, day: str, hour: str) -> None:
        """Mark the host's day and hour, the fleet's day and the fleet's hour out of date."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def q(self, sql: str) -> str:
        return sql if self.param == "?" else sql.replace("?", self.param)

    def run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._execute(self.q(sql), args)

    def twin(self) -> SqlStore | None:
        """Another connection to the same store, for reads in parallel, closed with it
        (None: not worth it, or not possible)."""
        return None

    # --- writing ---------------------------------------------------------------------
    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        try:
            moment = dt.datetime.strptime(start, FORMAT)
        except ValueError:
            raise UsageError(f"bucket start {start!r}: expected YYYY-MM-DD HH:MM:SS") from None
        day = start[:10]
        pruned = self.run("SELECT pruned FROM history_days WHERE host = ? AND day = ?", (host, day))
        if pruned and pruned[0][0]:
            return (
                f"{self.url}: {host} {start} skipped: its day's buckets were rolled up and dropped"
            )
        seconds = int(((document.get("collect") or {}).get("bucket") or {}).get("seconds") or 3600)
        rows = bucket_rows(document)
        with self._transaction():
            self._replace_bucket(host, stamp(moment), seconds, rows)
            self._mark_stale(host, day, stamp(_hour_of(moment)))
        return f"{self.url}: {host} {start}"

    def _replace_bucket(self, host: str, start: str, seconds: int, rows: BucketRows) -> None:
        # The bucket's row first, inserted or updated: its lock makes a second writer of the
        # same bucket wait until this one commits, then delete what this one wrote (without
        # it, both would find no classes to delete and the second insert would collide).
        values = (host, start, seconds, rows.events, rows.query_time, rows.qt_sketch, rows.meta,
                  stamp(dt.datetime.now()))  # fmt: skip
        head = (
            "INSERT INTO history_buckets (host, start, seconds, events, query_time, qt_sketch,"
            " meta, written_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        if self.dialect == "mysql":
            self.run(
                head + " ON DUPLICATE KEY UPDATE seconds = VALUES(seconds),"
                " events = VALUES(events), query_time = VALUES(query_time),"
                " qt_sketch = VALUES(qt_sketch), meta = VALUES(meta),"
                " written_at = VALUES(written_at)",
                values,
            )
        else:  # one writer at a time (BEGIN IMMEDIATE)
            self.run("DELETE FROM history_buckets WHERE host = ? AND start = ?", (host, start))
            self.run(head, values)
        self.run("DELETE FROM history_classes WHERE host = ? AND start = ?", (host, start))
        self._insert(
            "history_classes",
            ("host", "start", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state",
             *BOUND_COLUMNS),
            [
                (host, start, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state,
                 *row_figures(c.count, c.qt_sketch, c.state))
                for c in rows.classes
            ],
        )  # fmt: skip

    def _insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        marks = "(" + ", ".join([self.param] * len(columns)) + ")"
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        if self.dialect == "sqlite":
            self._executemany(head + marks, rows)
            return
        for index in range(0, len(rows), BATCH):
            chunk = rows[index : index + BATCH]
            flat = [value for row in chunk for value in row]
            self._execute(head + ", ".join([marks] * len(chunk)), flat)

    # --- reading ---------------------------------------------------------------------
    def hosts(
        self, since: dt.datetime, until: dt.datetime, pattern: str | None = None
    ) -> list[str]:
        found = {
            str(row[0])
            for row in self.run(
                "SELECT DISTINCT host FROM history_buckets WHERE start >= ? AND start < ?",
                (stamp(since), stamp(until)),
            )
        }
        for host, day in self.run(
            "SELECT host, day FROM history_days WHERE day >= ? AND day < ? AND meta IS NOT NULL",
            (since.date().isoformat(), until.date().isoformat()),
        ):
            if self._whole_day(_text(day), since, until):
                found.add(str(host))
        if pattern is not None:
            found = {host for host in found if fnmatch.fnmatchcase(host, pattern)}
        return sorted(found)

    @staticmethod
    def _whole_day(day: str, since: dt.datetime, until: dt.datetime) -> bool:
        start = _day_start(day)
        return start >= since and start + dt.timedelta(days=1) <= until

    def _full_days(self, since: dt.datetime, until: dt.datetime) -> list[str]:
        first = since.replace(hour=0, minute=0, second=0, microsecond=0)
        if first < since:
            first += dt.timedelta(days=1)
        days = []
        while first + dt.timedelta(days=1) <= until:
            days.append(first.date().isoformat())
            first += dt.timedelta(days=1)
        return days

    def _selection(
        self, since: dt.datetime, until: dt.datetime, hosts: str | None, host: str | None
    ) -> tuple[list[str], bool]:
        """The hosts a report covers, and whether that is every host of the window (then
        the fleet's roll-ups hold exactly them)."""
        every = self.hosts(since, until)
        if host is not None:
            selected = [host] if host in every else []
        else:
            selected = every if hosts is None else self.hosts(since, until, hosts)
        return selected, bool(selected) and selected == every

    def report(
        self,
        since: dt.datetime,
        until: dt.datetime,
        *,
        hosts: str | None = None,
        host: str | None = None,
        max_classes: int = 10_000,
        order_by: str = "Query_time:sum",
    ) -> Report:
        digest = self.digest(
            since, until, hosts=hosts, host=host, max_classes=max_classes, order_by=order_by
        )
        return Report.of_document(full_document(digest), self.url)

    def digest(
        self,
        since: dt.datetime,
        until: dt.datetime,
        *,
        hosts: str | None = None,
        host: str | None = None,
        max_classes: int = 10_000,
        order_by: str = "Query_time:sum",
    ) -> Digest:
        """The merged :class:`govern.digest.result.Digest` of the window, with each class's
        costliest hosts (``top_hosts``) and the store's window (``store``)."""
        selected, fleet = self._selection(since, until, hosts, host)
        merger = Merger()
        shares: dict[str, dict[str, list[int]]] = {}
        reading = prefetched(self._units(since, until, selected, fleet, shares))
        with no_collection(), contextlib.closing(reading):  # an error here stops the reader
            for meta, classes in reading:
                merger.add(meta, classes)
        digest = merger.digest(order_by=order_by, max_classes=max_classes)
        digest.since, digest.until = stamp(since), stamp(until)
        digest.top_hosts = {
            class_id: [
                HostShare(name, count, round(micro / 1_000_000, 6))
                for name, (count, micro) in sorted(
                    by_host.items(), key=lambda item: (-item[1][1], -item[1][0], item[0])
                )[:TOP_HOSTS]
            ]
            for class_id, by_host in shares.items()
        }
        digest.store = {"url": self.url, "hosts": selected, "host_filter": host or hosts}
        return digest

    def _units(
        self,
        since: dt.datetime,
        until: dt.datetime,
        selected: list[str],
        fleet: bool,
        shares: dict[str, dict[str, list[int]]],
    ) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
        """(meta, class documents) of every unit the window reads; ``shares`` gets each
        class's count and time per host.

        The whole fleet reads its blocks and days for whole days, then its hours (blocks of
        hours, fresh hours) for the rest (a whole day only when every hour of it with
        buckets is fresh); what is left is read per host: its blocks and day roll-ups for
        whole days, its buckets for the rest."""
        if not selected:
            return
        days = self._full_days(since, until)
        spans: list[tuple[dt.datetime, dt.datetime]] = []  # read for every host
        if fleet:
            done: set[str] = set()
            for start, span in self._plan(FLEET_DAYS, {FLEET_DAYS.number(day) for day in days}):
                yield self._read(FLEET_DAYS, start, span, shares)
                spans.append(self._span(FLEET_DAYS, start, span))
                done.update(FLEET_DAYS.key(n) for n in range(start, start + span))
            for start, span in self._plan(
                FLEET_HOURS, self._wanted_hours(since, until, days, done)
            ):
                yield self._read(FLEET_HOURS, start, span, shares)
                spans.append(self._span(FLEET_HOURS, start, span))
        read_days = {
            FLEET_DAYS.key(n)
            for low, high in spans
            for n in range(
                FLEET_DAYS.number(stamp(low)), FLEET_DAYS.number(stamp(high - _SECOND)) + 1
            )
        }
        left = {HOST_DAYS.number(day) for day in days if day not in read_days}
        for name in selected:
            mine = list(spans)
            ladder = HOST_DAYS.of(name)
            for start, span in self._plan(ladder, left):
                yield self._read(ladder, start, span, shares)
                mine.append(self._span(ladder, start, span))
            hours = HOST_HOURS.of(name)
            wanted = {n for low, high in _gaps(since, until, mine) for n in _whole_hours(low, high)}
            blocks = {
                self._span(hours, start, span): (start, span)
                for start, span in self._plan(hours, wanted)
                if span > 1  # a lone hour is its buckets
            }
            # in time order, as the buckets alone were read: a tie between samples goes to
            # the later one, so the same sample wins either way
            pieces = sorted([*blocks, *_gaps(since, until, mine + list(blocks))])
            for low, high in pieces:
                if (low, high) in blocks:
                    yield self._read(hours, *blocks[low, high], shares)
                else:
                    yield from self._bucket_units(name, stamp(low), stamp(high), shares)

    @staticmethod
    def _span(ladder: Ladder, start: int, span: int) -> tuple[dt.datetime, dt.datetime]:
        low = _moment(ladder.key(start))
        return low, low + dt.timedelta(seconds=span * ladder.width)

    def _plan(self, ladder: Ladder, wanted: set[int]) -> list[tuple[int, int]]:
        """(start, span) of the ladder's blocks and units that read ``wanted``."""
        if not wanted:
            return []
        first, last = min(wanted), max(wanted)
        fresh = self._fresh(ladder, first, last)
        return walk(ladder, wanted, fresh, self._valid_blocks(ladder, first, last, fresh))

    def _read(
        self, ladder: Ladder, start: int, span: int, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        if span > 1:
            return self._block_unit(ladder, start, span, shares)
        key = ladder.key(start)
        if ladder.host is not None:
            return self._day_unit(ladder.host, key, shares)
        if ladder.width == DAY:
            return self._fleet_unit(key, shares)
        return self._fleet_hour_unit(key, shares)

    def _wanted_hours(
        self, since: dt.datetime, until: dt.datetime, days: list[str], done: set[str]
    ) -> set[int]:
        """The fleet hours a window would read: every hour inside it outside its whole days,
        and those of a whole day not read from the fleet's days when every hour of that day
        with buckets has a fresh fleet hour (and no host's buckets of it were dropped)."""
        first = FLEET_HOURS.number(stamp(since)) + (0 if since == _hour_of(since) else 1)
        last = FLEET_HOURS.number(stamp(until)) - 1
        whole = set(days)
        if days:  # the edges: before the first whole day, after the last
            wanted = set(range(first, FLEET_HOURS.number(days[0] + " 00:00:00")))
            wanted.update(range(FLEET_HOURS.number(days[-1] + " 23:00:00") + 1, last + 1))
        else:
            wanted = set(range(first, last + 1))
        candidates = whole - done
        if not candidates:
            return wanted
        low, high = min(candidates), max(candidates)
        after = stamp(_day_start(high) + dt.timedelta(days=1))
        pruned = {
            _text(day)
            for (day,) in self.run(
                "SELECT DISTINCT day FROM history_days WHERE day >= ? AND day <= ? AND pruned = 1",
                (low, high),
            )
        }
        data: dict[str, set[int]] = {}
        for (start,) in self.run(
            "SELECT DISTINCT start FROM history_buckets WHERE start >= ? AND start < ?",
            (low + " 00:00:00", after),
        ):
            key = _text(start)
            data.setdefault(key[:10], set()).add(FLEET_HOURS.number(key))
        fresh = self._fresh(
            FLEET_HOURS, FLEET_HOURS.number(low + " 00:00:00"), FLEET_HOURS.number(after) - 1
        )
        for day in candidates - pruned:
            if data.get(day) and data[day] <= fresh:
                base = FLEET_HOURS.number(day + " 00:00:00")
                wanted.update(range(base, base + 24))
        return wanted

    def _fleet_hour_unit(
        self, hour: str, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        ((meta,),) = self.run("SELECT meta FROM history_fleet_hours WHERE start = ?", (hour,))
        rows = self.run(
            "SELECT class_id, state, hosts FROM history_fleet_hour_classes WHERE start = ?",
            (hour,),
        )
        return unpack(meta), self._fleet_classes(rows, shares)

    def _fresh(self, ladder: Ladder, first: int, last: int) -> set[int]:
        """The ladder's units in [first, last] rolled up and not written since."""
        col = ladder.column
        rows = self.run(
            f"SELECT {col} FROM {ladder.units} WHERE {col} >= ? AND {col} <= ? AND stale = 0"
            f" AND meta IS NOT NULL{ladder.where}",
            (ladder.key(first), ladder.key(last), *ladder.args),
        )
        fresh = {ladder.number(_text(row[0])) for row in rows}
        if fresh and ladder is FLEET_DAYS:  # a host-day written since makes the fleet's stale
            for (day,) in self.run(
                "SELECT DISTINCT day FROM history_days WHERE day >= ? AND day <= ? AND stale = 1",
                (ladder.key(first), ladder.key(last)),
            ):
                fresh.discard(ladder.number(_text(day)))
        return fresh

    def _versions(self, ladder: Ladder, first: int, last: int) -> dict[int, int]:
        """Every unit's version in [first, last] (a write bumps it)."""
        col = ladder.column
        rows = self.run(
            f"SELECT {col}, version FROM {ladder.units} WHERE {col} >= ? AND {col} <= ?"
            f"{ladder.where}",
            (ladder.key(first), ladder.key(last), *ladder.args),
        )
        return {ladder.number(_text(key)): int(version) for key, version in rows}

    def _valid_blocks(
        self, ladder: Ladder, first: int, last: int, fresh: set[int]
    ) -> set[tuple[int, int]]:
        """The blocks inside [first, last] whose every unit with data is freshly rolled up
        and unchanged since the block was built."""
        col = ladder.column
        rows = self.run(
            f"SELECT {col}, span, versions FROM {ladder.blocks} WHERE {col} >= ? AND {col} <= ?"
            f"{ladder.where}",
            (ladder.key(first), ladder.key(last), *ladder.args),
        )
        spans = [(ladder.number(_text(key)), int(span), int(total)) for key, span, total in rows]
        inside = [item for item in spans if item[0] + item[1] - 1 <= last]
        return valid(inside, self._versions(ladder, first, last), fresh)

    def _block_unit(
        self, ladder: Ladder, start: int, span: int, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        col, args = ladder.column, (ladder.key(start), span, *ladder.args)
        ((meta,),) = self.run(
            f"SELECT meta FROM {ladder.blocks} WHERE {col} = ? AND span = ?{ladder.where}", args
        )
        if ladder.host is None:
            rows = self.run(
                f"SELECT class_id, state, hosts FROM {ladder.block_classes}"
                f" WHERE {col} = ? AND span = ?",
                args,
            )
            return unpack(meta), self._fleet_classes(rows, shares)
        rows = self.run(
            f"SELECT class_id, count, query_time, state FROM {ladder.block_classes}"
            f" WHERE {col} = ? AND span = ? AND host = ?",
            args,
        )
        return unpack(meta), self._classes(ladder.host, rows, shares)

    def _fleet_unit(
        self, day: str, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        ((meta,),) = self.run("SELECT meta FROM history_fleet_days WHERE day = ?", (day,))
        rows = self.run(
            "SELECT class_id, state, hosts FROM history_fleet_classes WHERE day = ?", (day,)
        )
        return unpack(meta), self._fleet_classes(rows, shares)

    @staticmethod
    def _fleet_classes(
        rows: Sequence[tuple[Any, ...]], shares: dict[str, dict[str, list[int]]]
    ) -> list[bytes]:
        classes = []
        for class_id, state, hosts in rows:
            classes.append(bytes(state))
            key = str(class_id)
            part: dict[str, list[int]] = unpack(hosts)
            mine = shares.get(key)
            if mine is None:  # the class's first unit: its pairs as they are (a fleet
                shares[key] = part  # week's report reads 3 to 13 units of 50 hosts a class)
                continue
            for name, pair in part.items():
                slot = mine.get(name)
                if slot is None:
                    mine[name] = pair
                else:
                    slot[0] += pair[0]
                    slot[1] += pair[1]
        return classes

    def _day_unit(
        self, host: str, day: str, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        ((meta,),) = self.run(
            "SELECT meta FROM history_days WHERE host = ? AND day = ?", (host, day)
        )
        rows = self.run(
            "SELECT class_id, count, query_time, state FROM history_day_classes"
            " WHERE host = ? AND day = ?",
            (host, day),
        )
        return unpack(meta), self._classes(host, rows, shares)

    def _bucket_units(
        self, host: str, low: str, high: str, shares: dict[str, dict[str, list[int]]]
    ) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
        metas = self.run(
            "SELECT start, meta FROM history_buckets WHERE host = ? AND start >= ? AND start < ?"
            " ORDER BY start",
            (host, low, high),
        )
        if not metas:
            return
        rows = self.run(
            "SELECT class_id, count, query_time, state FROM history_classes"
            " WHERE host = ? AND start >= ? AND start < ?",
            (host, low, high),
        )
        # the buckets' classes merge as one unit: their metas' totals are added apart
        yield unpack(metas[0][1]), self._classes(host, rows, shares)
        for _, meta in metas[1:]:
            yield unpack(meta), []

    @staticmethod
    def _classes(
        host: str, rows: Sequence[tuple[Any, ...]], shares: dict[str, dict[str, list[int]]]
    ) -> list[bytes]:
        classes = []
        for class_id, count, micro, state in rows:
            classes.append(bytes(state))
            key = str(class_id)
            mine = shares.get(key)
            if mine is None:
                shares[key] = {host: [int(count), int(micro)]}
                continue
            slot = mine.get(host)
            if slot is None:
                mine[host] = [int(count), int(micro)]
            else:
                slot[0] += int(count)
                slot[1] += int(micro)
        return classes

    # --- series ----------------------------------------------------------------------
    def series(
        self,
        since: dt.datetime,
        until: dt.datetime,
        *,
        step: int,
        hosts: str | None = None,
        host: str | None = None,
        class_id: str | None = None,
        by_host: bool = False,
    ) -> list[Point]:
        if step < 1:
            raise UsageError(f"step {step}: must be at least one second")
        selected, _ = self._selection(since, until, hosts, host)
        wanted = set(selected)
        # (step start, host or None) -> [count, micro, sketch]
        points: dict[tuple[dt.datetime, str | None], list[Any]] = {}
        epoch = dt.datetime(1970, 1, 1)

        def add(start: Any, name: str, count: int, micro: int, blob: bytes | None) -> None:
            seconds = int((_moment(start) - epoch).total_seconds())
            at = epoch + dt.timedelta(seconds=seconds - seconds % step)
            key = (at, name if by_host else None)
            slot = points.get(key)
            if slot is None:
                slot = points[key] = [0, 0, {}]
            slot[0] += int(count)
            slot[1] += int(micro)
            if blob is not None:
                sketch.merge_into(slot[2], merged_sketch([blob]))

        low, high = stamp(since), stamp(until)
        if class_id is None:
            rows = self.run(
                "SELECT host, start, events, query_time, qt_sketch FROM history_buckets"
                " WHERE start >= ? AND start < ?",
                (low, high),
            )
        else:
            rows = self.run(
                "SELECT host, start, count, query_time, qt_sketch FROM history_classes"
                " WHERE class_id = ? AND start >= ? AND start < ?",
                (class_id, low, high),
            )
        seen: set[tuple[str, str]] = set()
        for name, start, count, micro, blob in rows:
            if name in wanted:
                add(start, name, count, micro, blob)
                seen.add((str(name), _text(start)[:10]))
        # days whose buckets were dropped: their roll-ups, at the day's start
        days = self._full_days(since, until)
        if days:
            table, column = (
                ("history_days", "events") if class_id is None else ("history_day_classes", "count")
            )
            extra = "" if class_id is None else " AND class_id = ?"
            args: tuple[Any, ...] = (days[0], days[-1]) + (() if class_id is None else (class_id,))
            for name, day, count, micro, blob in self.run(
                f"SELECT host, day, {column}, query_time, qt_sketch FROM {table}"
                f" WHERE day >= ? AND day <= ? AND meta IS NOT NULL{extra}"
                if class_id is None
                else f"SELECT c.host, c.day, c.count, c.query_time, c.qt_sketch FROM {table} c"
                " JOIN history_days d ON d.host = c.host AND d.day = c.day"
                f" WHERE c.day >= ? AND c.day <= ? AND d.pruned = 1{extra}",
                args,
            ):
                if name not in wanted:
                    continue
                if class_id is None and (str(name), _text(day)) in seen:
                    continue
                if class_id is None:
                    pruned = self.run(
                        "SELECT pruned FROM history_days WHERE host = ? AND day = ?", (name, day)
                    )
                    if not (pruned and pruned[0][0]):
                        continue
                add(_text(day), str(name), count, micro or 0, blob)
        result = []
        for (at, name), (count, micro, merged) in sorted(
            points.items(), key=lambda item: (item[0][0], item[0][1] or "")
        ):
            p95 = p99 = None
            if merged:
                low_key, high_key = min(merged), max(merged)
                bottom = sketch.bucket_range(low_key)[0]
                top = sketch.bucket_range(high_key)[1]
                p95, p99 = (
                    v / 1_000_000 for v in sketch.quantiles(merged, (0.95, 0.99), bottom, top)
                )
            result.append(Point(at, name, class_id, count, micro / 1_000_000, p95, p99))
        return result

    # --- roll-ups and retention --------------------------------------------------------
    def roll_up(self, now: dt.datetime | None = None, *, host: str | None = None) -> RollUp:
        """Roll up every stale host-day that ended ROLL_UP_AFTER ago (``host``: only its),
        then every fleet day whose host-days are all fresh."""
        with no_collection():
            return self._roll_up(now, host)

    def _roll_up(self, now: dt.datetime | None, host: str | None) -> RollUp:
        began = dt.datetime.now()
        now = now or began
        latest = (now - dt.timedelta(seconds=ROLL_UP_AFTER + DAY)).date().isoformat()
        where = " AND host = ?" if host else ""
        stale = self.run(
            f"SELECT host, day, version FROM history_days WHERE stale = 1 AND day <= ?{where}",
            (latest, host) if host else (latest,),
        )
        for name, day, version in stale:
            self._roll_up_day(str(name), _text(day), int(version))
        hours = self._roll_up_fleet_hours(now)
        ended = FLEET_HOURS.number(stamp(now)) - 1
        blocks = self._roll_up_blocks(FLEET_HOURS, ended)
        fleet = 0
        for day, version in self.run(
            "SELECT day, version FROM history_fleet_days WHERE stale = 1 AND day <= ?", (latest,)
        ):
            if self.run(
                "SELECT 1 FROM history_days WHERE day = ? AND stale = 1 LIMIT 1", (_text(day),)
            ):
                continue
            self._roll_up_fleet_day(_text(day), int(version))
            fleet += 1
        blocks += self._roll_up_blocks(FLEET_DAYS, FLEET_DAYS.number(latest))
        names = (
            [host]
            if host
            else [str(row[0]) for row in self.run("SELECT DISTINCT host FROM history_days")]
        )
        self._roll_up_host_hours(now, host)
        for name in sorted(names):  # each collector builds its own host's blocks
            blocks += self._roll_up_blocks(HOST_DAYS.of(name), HOST_DAYS.number(latest))
            blocks += self._roll_up_blocks(HOST_HOURS.of(name), ended)
        seconds = (dt.datetime.now() - began).total_seconds()
        return RollUp(len(stale), fleet, seconds, blocks, hours)

    def _roll_up_fleet_hours(self, now: dt.datetime) -> int:
        """Roll up every stale fleet hour that ended HOUR_ROLL_UP_AFTER ago, or that ended
        and is complete (every host with buckets in it or the hour before has its bucket that
        ends the hour: the last collector to write it rolls it up), unless a host's buckets
        of its day were dropped (its hours are then read from the day roll-ups)."""
        done = 0
        latest = stamp(now - dt.timedelta(seconds=HOUR_ROLL_UP_AFTER + 3600))
        for (start,) in self.run(
            "SELECT start FROM history_fleet_hours WHERE stale = 1 AND start <= ?",
            (stamp(now - dt.timedelta(hours=1)),),
        ):
            hour = _moment(start)
            if stamp(hour) > latest and not self._complete_hour(hour):
                continue
            if self.run(
                "SELECT 1 FROM history_days WHERE day = ? AND pruned = 1 LIMIT 1",
                (hour.date().isoformat(),),
            ):
                continue
            claimed = self._claim_hour(stamp(hour))
            if claimed is not None:
                self._roll_up_fleet_hour(hour, claimed)
                done += 1
        return done

    def _roll_up_host_hours(self, now: dt.datetime, host: str | None) -> None:
        """Mark fresh every stale host hour that ended HOUR_ROLL_UP_AFTER ago (unless
        written meanwhile): its buckets are the unit, nothing is merged; the host's blocks
        of hours are built over fresh hours only."""
        where = " AND host = ?" if host else ""
        latest = stamp(now - dt.timedelta(seconds=HOUR_ROLL_UP_AFTER + 3600))
        for name, start, version in self.run(
            f"SELECT host, start, version FROM history_host_hours WHERE stale = 1"
            f" AND start <= ?{where}",
            (latest, host) if host else (latest,),
        ):
            with self._transaction():
                self.run(
                    "UPDATE history_host_hours SET stale = 0, meta = ?, rolled_at = ?"
                    " WHERE host = ? AND start = ? AND version = ?",
                    (b"", stamp(dt.datetime.now()), name, start, version),
                )

    def _complete_hour(self, hour: dt.datetime) -> bool:
        ends: dict[str, dt.datetime] = {}
        for name, start, seconds in self.run(
            "SELECT host, start, seconds FROM history_buckets WHERE start >= ? AND start < ?",
            (stamp(hour - dt.timedelta(hours=1)), stamp(hour + dt.timedelta(hours=1))),
        ):
            end = _moment(start) + dt.timedelta(seconds=int(seconds))
            ends[str(name)] = max(end, ends.get(str(name), end))
        return all(end >= hour + dt.timedelta(hours=1) for end in ends.values())

    def _claim_hour(self, start: str) -> int | None:
        """The hour's version if this roll-up is to build it: every collector finds the same
        hour stale when it writes the next bucket, and one of them merges every host's
        buckets (another may take over once a claim is CLAIM_FOR old: its holder died)."""
        now = dt.datetime.now()
        lock = " FOR UPDATE" if self.dialect == "mysql" else ""
        with self._transaction():
            rows = self.run(
                f"SELECT version, stale, claimed_at FROM history_fleet_hours WHERE start = ?{lock}",
                (start,),
            )
            if not rows or int(rows[0][1]) != 1:
                return None
            if rows[0][2] is not None and _moment(rows[0][2]) > now - CLAIM_FOR:
                return None
            self.run(
                "UPDATE history_fleet_hours SET claimed_at = ? WHERE start = ?", (stamp(now), start)
            )
            return int(rows[0][0])

    def _roll_up_fleet_hour(self, hour: dt.datetime, version: int) -> None:
        low, high = stamp(hour), stamp(hour + dt.timedelta(hours=1))
        merger = Merger()
        shares: dict[str, dict[str, list[int]]] = {}
        names = [str(row[0]) for row in self.run(
            "SELECT DISTINCT host FROM history_buckets WHERE start >= ? AND start < ?"
            " ORDER BY host", (low, high),
        )]  # fmt: skip
        for name in names:
            for meta, classes in self._bucket_units(name, low, high, shares):
                merger.add(meta, classes)
        self._write_fleet_roll_up(
            ("history_fleet_hours", "history_fleet_hour_classes", "start", low),
            merger, shares, len(names), version, "claimed_at = NULL, ",
        )  # fmt: skip

    def _roll_up_blocks(self, ladder: Ladder, last: int) -> int:
        """Build every block of the ladder that ended by unit ``last`` and is missing or out
        of date, each from its two halves (blocks of half its span), the shortest from its
        units, shortest first."""
        versions = self._versions(ladder, 0, last)
        if not versions:
            return 0
        fresh = self._fresh(ladder, 0, last)
        built = 0
        for span in ladder.spans:
            have = {
                ladder.number(_text(key)): int(total)
                for key, total in self.run(
                    f"SELECT {ladder.column}, versions FROM {ladder.blocks} WHERE span = ?"
                    f"{ladder.where}",
                    (span, *ladder.args),
                )
            }
            smallest = ladder.spans[0]
            halves = set() if span == smallest else self._valid_blocks(ladder, 0, last, fresh)
            for start, total, parts in to_build(
                span, versions, fresh, have, halves, last, smallest
            ):
                self._roll_up_block(ladder, start, span, total, parts)
                built += 1
        return built

    def _roll_up_block(
        self, ladder: Ladder, start: int, span: int, versions: int, parts: tuple[int, ...]
    ) -> None:
        merger = Merger()
        shares: dict[str, dict[str, list[int]]] = {}
        for part in parts:
            half = 1 if span == ladder.spans[0] else span // 2  # the smallest: from units
            if ladder.host is not None and ladder.units == HOST_HOURS.units and half == 1:
                low = ladder.key(part)  # a host's hour: its buckets
                high = stamp(_moment(low) + dt.timedelta(hours=1))
                for unit in self._bucket_units(ladder.host, low, high, shares):
                    merger.add(*unit)
            else:
                merger.add(*self._read(ladder, part, half, shares))
        rows = digest_rows(merger.digest())
        col = ladder.column
        head = (col, "span") + (("host",) if ladder.host is not None else ())
        keys = (ladder.key(start), span, *ladder.args)
        figures = ("class_id", "count", "query_time", "qt_max", "qt_sketch", "state")
        with self._transaction():
            for table in (ladder.block_classes, ladder.blocks):
                self.run(f"DELETE FROM {table} WHERE {col} = ? AND span = ?{ladder.where}", keys)
            self._insert(
                ladder.block_classes,
                head + figures + (("hosts",) if ladder.fleet else ()),
                [
                    (*keys, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state)
                    + ((pack(shares.get(c.class_id, {})),) if ladder.fleet else ())
                    for c in rows.classes
                ],
            )
            self._insert(
                ladder.blocks,
                (*head, "versions", "events", "query_time", "qt_sketch", "meta", "rolled_at"),
                [(*keys, versions, rows.events, rows.query_time, rows.qt_sketch, rows.meta,
                  stamp(dt.datetime.now()))],
            )  # fmt: skip

    def _roll_up_day(self, host: str, day: str, version: int) -> None:
        low = day + " 00:00:00"
        high = stamp(_day_start(day) + dt.timedelta(days=1))
        merger = Merger()
        if self.run("SELECT pruned FROM history_days WHERE host = ? AND day = ?", (host, day))[0][
            0
        ]:
            return  # its buckets are gone: the roll-up is all there is
        for meta, classes in self._bucket_units(host, low, high, {}):
            merger.add(meta, classes)
        rows = digest_rows(merger.digest())
        with self._transaction():
            self.run("DELETE FROM history_day_classes WHERE host = ? AND day = ?", (host, day))
            self._insert(
                "history_day_classes",
                ("host", "day", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state",
                 *BOUND_COLUMNS),
                [
                    (host, day, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state,
                     *row_figures(c.count, c.qt_sketch, c.state))
                    for c in rows.classes
                ],
            )  # fmt: skip
            self.run(
                "UPDATE history_days SET events = ?, query_time = ?, qt_sketch = ?, meta = ?,"
                " rolled_at = ?, stale = CASE WHEN version = ? THEN 0 ELSE 1 END"
                " WHERE host = ? AND day = ?",
                (rows.events, rows.query_time, rows.qt_sketch, rows.meta,
                 stamp(dt.datetime.now()), version, host, day),
            )  # fmt: skip
            self._mark_fleet_stale(day)

    def _mark_fleet_stale(self, day: str) -> None:
        raise NotImplementedError

    def _roll_up_fleet_day(self, day: str, version: int) -> None:
        merger = Merger()
        shares: dict[str, dict[str, list[int]]] = {}
        names = [str(row[0]) for row in self.run(
            "SELECT host FROM history_days WHERE day = ? AND meta IS NOT NULL ORDER BY host", (day,)
        )]  # fmt: skip
        # from the fleet's hours when they hold the whole day (3 blocks of 8 hours: a row a
        # class for each instead of one per host), else from every host's day
        done: set[str] = set()
        hours = self._wanted_hours(_day_start(day), _day_start(day), [day], done)
        if hours:  # (every hour with buckets is fresh: the plan reads each)
            for start, span in self._plan(FLEET_HOURS, hours):
                merger.add(*self._read(FLEET_HOURS, start, span, shares))
        else:
            for name in names:
                merger.add(*self._day_unit(name, day, shares))
        self._write_fleet_roll_up(
            ("history_fleet_days", "history_fleet_classes", "day", day),
            merger, shares, len(names), version,
        )  # fmt: skip

    def _write_fleet_roll_up(
        self,
        where: tuple[str, str, str, str],
        merger: Merger,
        shares: dict[str, dict[str, list[int]]],
        hosts: int,
        version: int,
        also: str = "",
    ) -> None:
        """Replace a fleet roll-up (a day or an hour: its head table, class table, key
        column and key) with ``merger``'s digest; fresh unless its version moved meanwhile."""
        head, table, column, key = where
        rows = digest_rows(merger.digest())
        with self._transaction():
            self.run(f"DELETE FROM {table} WHERE {column} = ?", (key,))
            self._insert(
                table,
                (column, "class_id", "count", "query_time", "qt_max", "qt_sketch", "state",
                 "hosts"),
                [
                    (key, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state,
                     pack(shares.get(c.class_id, {})))
                    for c in rows.classes
                ],
            )  # fmt: skip
            self.run(
                f"UPDATE {head} SET events = ?, query_time = ?, qt_sketch = ?, meta = ?,"
                f" hosts = ?, rolled_at = ?, {also}"
                f"stale = CASE WHEN version = ? THEN 0 ELSE 1 END WHERE {column} = ?",
                (rows.events, rows.query_time, rows.qt_sketch, rows.meta, hosts,
                 stamp(dt.datetime.now()), version, key),
            )  # fmt: skip

    def backfill(self, budget: float = BACKFILL_BUDGET) -> int:
        """Rows written before migration 0008 given their percentile columns, for at most
        ``budget`` seconds, resumed by the next call (bounds.backfill)."""
        return backfill(self, budget)

    def _retain_fleet_hours(self, before: str) -> None:
        """Drop the fleet's hours (and blocks of hours) of each day before ``before`` once no
        host has buckets in it, never by date alone: a host whose old day is not pruned yet
        (stale, its collector late) keeps the day's hours, so a late write to it bumps its
        hour's row instead of recreating one beside hours with buckets and no row (which a
        block of hours or a stale fleet day would read as empty)."""
        days = sorted(
            {
                _text(start)[:10]
                for (start,) in self.run(
                    "SELECT start FROM history_fleet_hours WHERE start < ?", (before + " 00:00:00",)
                )
            }
        )
        for day in days:
            low = day + " 00:00:00"
            high = stamp(_day_start(day) + dt.timedelta(days=1))
            if self.run(
                "SELECT 1 FROM history_buckets WHERE start >= ? AND start < ? LIMIT 1", (low, high)
            ):
                continue
            with self._transaction():
                for table in (
                    "history_fleet_hour_block_classes",
                    "history_fleet_hour_blocks",
                    "history_fleet_hour_classes",
                    "history_fleet_hours",
                ):
                    self.run(f"DELETE FROM {table} WHERE start >= ? AND start < ?", (low, high))

    def retain(
        self, now: dt.datetime | None = None, *, hourly_days: int = 14, keep_days: int = 400
    ) -> Retained:
        """Drop the buckets of rolled-up host-days older than ``hourly_days`` (their day's
        roll-up stays), and everything older than ``keep_days``."""
        now = now or dt.datetime.now()
        hourly_before = (now - dt.timedelta(days=hourly_days)).date().isoformat()
        keep_before = (now - dt.timedelta(days=keep_days)).date().isoformat()
        pruned = 0
        for name, day in self.run(
            "SELECT host, day FROM history_days WHERE day < ? AND stale = 0 AND pruned = 0"
            " AND meta IS NOT NULL",
            (hourly_before,),
        ):
            low = _text(day) + " 00:00:00"
            high = stamp(_day_start(_text(day)) + dt.timedelta(days=1))
            with self._transaction():
                for table in _HOURLY:
                    self.run(
                        f"DELETE FROM {table} WHERE host = ? AND start >= ? AND start < ?",
                        (name, low, high),
                    )
                self.run(
                    "UPDATE history_days SET pruned = 1 WHERE host = ? AND day = ?", (name, day)
                )
            pruned += 1
        old = self.run("SELECT host, day FROM history_days WHERE day < ?", (keep_before,))
        for name, day in old:  # a host-day at a time: every delete walks a primary key
            low = _text(day) + " 00:00:00"
            high = stamp(_day_start(_text(day)) + dt.timedelta(days=1))
            with self._transaction():
                for table in _HOURLY:
                    self.run(
                        f"DELETE FROM {table} WHERE host = ? AND start >= ? AND start < ?",
                        (name, low, high),
                    )
                self.run("DELETE FROM history_day_classes WHERE host = ? AND day = ?", (name, day))
                self.run("DELETE FROM history_days WHERE host = ? AND day = ?", (name, day))
        self._retain_fleet_hours(hourly_before)
        old_days = {_text(day) for _, day in old}
        for day in sorted(old_days):
            with self._transaction():
                self.run("DELETE FROM history_fleet_classes WHERE day = ?", (day,))
                self.run("DELETE FROM history_fleet_days WHERE day = ?", (day,))
        for day, span in self.run(
            "SELECT day, span FROM history_fleet_blocks WHERE day < ?", (keep_before,)
        ):
            with self._transaction():
                for table in ("history_fleet_block_classes", "history_fleet_blocks"):
                    self.run(f"DELETE FROM {table} WHERE day = ? AND span = ?", (day, span))
        for name, day, span in self.run(
            "SELECT host, day, span FROM history_host_blocks WHERE day < ?", (keep_before,)
        ):
            with self._transaction():
                for table in ("history_host_block_classes", "history_host_blocks"):
                    self.run(
                        f"DELETE FROM {table} WHERE host = ? AND day = ? AND span = ?",
                        (name, day, span),
                    )
        return Retained(pruned, len(old_days))
