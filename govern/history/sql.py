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

A report reads, for each full day of its window, the fleet's roll-up when it is fresh
(no host filter), else each host's day roll-up when fresh, else the host's buckets; the
hours at the window's edges come from the buckets.
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
from govern.history.merging import Merger, no_collection
from govern.history.model import TOP_HOSTS, Point
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


_SQLITE = {"blob": "BLOB", "text": "TEXT", "day": "TEXT", "stamp": "TEXT", "engine": ""}
_MYSQL = {
    "blob": "MEDIUMBLOB",
    "text": "CHAR(32) CHARACTER SET ascii",
    "day": "DATE",
    "stamp": "DATETIME",
    "engine": " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
}

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
    # govern regressions sums each class's figures over a span for many hosts: covering
    # indexes read ~60 bytes a row instead of the row with its state (~2.5 KB)
    Migration(
        "history_0005_class_figures",
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
]
#: Fleet roll-ups of aligned blocks of days (2, 4 … 64 days, each the merge of its halves):
#: a window of whole days reads at most two blocks of each span instead of a row a day.
SPANS = (2, 4, 8, 16, 32, 64)
_EPOCH_DAY = dt.date(1970, 1, 1)


def _day_number(day: str) -> int:
    return (dt.date.fromisoformat(day) - _EPOCH_DAY).days


def _day_of(number: int) -> str:
    return (_EPOCH_DAY + dt.timedelta(days=number)).isoformat()


@dataclass(frozen=True)
class RollUp:
    """What :meth:`SqlStore.roll_up` did."""

    days: int  # host-days rolled up
    fleet_days: int
    seconds: float
    blocks: int = 0  # fleet blocks of 2 to 64 days built


@dataclass(frozen=True)
class Retained:
    """What :meth:`SqlStore.retain` removed."""

    hourly_days: int  # host-days whose buckets went (their roll-up stays)
    days: int  # days removed altogether


def stamp(moment: dt.datetime) -> str:
    return moment.strftime(FORMAT)


def _day_start(day: str) -> dt.datetime:
    return dt.datetime.strptime(day, "%Y-%m-%d")


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

    def _mark_stale(self, host: str, day: str) -> None:
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
            self._mark_stale(host, day)
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
            ("host", "start", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state"),
            [
                (host, start, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state)
                for c in rows.classes
            ],
        )

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
        with no_collection():
            for meta, classes in self._units(since, until, selected, fleet, shares):
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
        class's count and time per host."""
        if not selected:
            return
        days = self._full_days(since, until)
        wanted = set(selected)
        covered: set[tuple[str, str]] = set()  # (host, day) read from a roll-up
        if days and fleet:
            fresh = self._fresh_fleet_days(days[0], days[-1])
            blocks = self._valid_blocks(days[0], days[-1], fresh)
            index = 0
            while index < len(days):
                day = days[index]
                span = next(
                    (n for n in reversed(SPANS) if (day, n) in blocks and index + n <= len(days)),
                    1,
                )
                if span > 1:
                    yield self._block_unit(day, span, shares)
                elif day in fresh:
                    yield self._fleet_unit(day, shares)
                else:
                    index += 1
                    continue
                for inside in days[index : index + span]:
                    covered.update((name, inside) for name in selected)
                index += span
        if days:
            for name, day in self._fresh_host_days(days[0], days[-1]):
                if name in wanted and (name, day) not in covered:
                    yield self._day_unit(name, day, shares)
                    covered.add((name, day))
        for name in selected:
            for low, high in self._bucket_ranges(since, until, days, name, covered):
                yield from self._bucket_units(name, low, high, shares)

    @staticmethod
    def _bucket_ranges(
        since: dt.datetime,
        until: dt.datetime,
        days: list[str],
        host: str,
        covered: set[tuple[str, str]],
    ) -> list[tuple[str, str]]:
        """The parts of [since, until) a host's buckets must give (outside its roll-ups)."""
        ranges: list[tuple[dt.datetime, dt.datetime]] = []
        cursor = since
        for day in days:
            if (host, day) in covered:
                start = _day_start(day)
                if cursor < start:
                    ranges.append((cursor, start))
                cursor = start + dt.timedelta(days=1)
        if cursor < until:
            ranges.append((cursor, until))
        return [(stamp(low), stamp(high)) for low, high in ranges]

    def _fresh_fleet_days(self, first: str, last: str) -> set[str]:
        rows = self.run(
            "SELECT day FROM history_fleet_days WHERE day >= ? AND day <= ? AND stale = 0"
            " AND meta IS NOT NULL",
            (first, last),
        )
        fresh = {_text(row[0]) for row in rows}
        if fresh:  # a host-day written since the fleet's roll-up makes it stale too
            for _, day in self.run(
                "SELECT host, day FROM history_days WHERE day >= ? AND day <= ? AND stale = 1",
                (first, last),
            ):
                fresh.discard(_text(day))
        return fresh

    def _fleet_versions(self, first: str, last: str) -> dict[str, int]:
        """Every fleet day's version in [first, last] (a write bumps it)."""
        rows = self.run(
            "SELECT day, version FROM history_fleet_days WHERE day >= ? AND day <= ?", (first, last)
        )
        return {_text(day): int(version) for day, version in rows}

    def _valid_blocks(self, first: str, last: str, fresh: set[str]) -> set[tuple[str, int]]:
        """The blocks inside [first, last] whose every day with buckets is freshly rolled up
        and unchanged since the block was built (the sum of their versions is the block's)."""
        versions = self._fleet_versions(first, last)
        valid = set()
        for day, span, total in self.run(
            "SELECT day, span, versions FROM history_fleet_blocks WHERE day >= ? AND day <= ?",
            (first, last),
        ):
            start = _day_number(_text(day))
            inside = [_day_of(start + n) for n in range(int(span))]
            if inside[-1] > last:
                continue
            known = [d for d in inside if d in versions]
            if all(d in fresh for d in known) and sum(versions[d] for d in known) == int(total):
                valid.add((_text(day), int(span)))
        return valid

    def _block_unit(
        self, day: str, span: int, shares: dict[str, dict[str, list[int]]]
    ) -> tuple[dict[str, Any], list[bytes]]:
        ((meta,),) = self.run(
            "SELECT meta FROM history_fleet_blocks WHERE day = ? AND span = ?", (day, span)
        )
        rows = self.run(
            "SELECT class_id, state, hosts FROM history_fleet_block_classes"
            " WHERE day = ? AND span = ?",
            (day, span),
        )
        return unpack(meta), self._fleet_classes(rows, shares)

    def _fresh_host_days(self, first: str, last: str) -> list[tuple[str, str]]:
        rows = self.run(
            "SELECT host, day FROM history_days WHERE day >= ? AND day <= ? AND stale = 0"
            " AND meta IS NOT NULL",
            (first, last),
        )
        return [(str(host), _text(day)) for host, day in rows]

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
            mine = shares.setdefault(str(class_id), {})
            for name, (count, micro) in unpack(hosts).items():
                slot = mine.get(name)
                if slot is None:
                    mine[name] = [count, micro]
                else:
                    slot[0] += count
                    slot[1] += micro
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
            slot = shares.setdefault(str(class_id), {}).get(host)
            if slot is None:
                shares[str(class_id)][host] = [int(count), int(micro)]
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
        blocks = self._roll_up_blocks(latest)
        return RollUp(len(stale), fleet, (dt.datetime.now() - began).total_seconds(), blocks)

    def _roll_up_blocks(self, latest: str) -> int:
        """Build every block of SPANS that ended by ``latest`` and is missing or out of date,
        each from its two halves (blocks of half its span, or fleet days), shortest first."""
        rows = self.run(
            "SELECT day, stale FROM history_fleet_days WHERE day <= ? AND meta IS NOT NULL",
            (latest,),
        )
        days = {_text(day): int(stale) for day, stale in rows}
        if not days:
            return 0
        built = 0
        last = _day_number(latest)
        for span in SPANS:
            starts = sorted({_day_number(day) // span * span for day in days})
            first = _day_of(starts[0])
            versions = self._fleet_versions(first, _day_of(starts[-1] + span - 1))
            fresh = self._fresh_fleet_days(first, _day_of(starts[-1] + span - 1))
            have = {
                (_text(day), int(n)): int(total)
                for day, n, total in self.run(
                    "SELECT day, span, versions FROM history_fleet_blocks WHERE span = ?", (span,)
                )
            }
            end = _day_of(starts[-1] + span - 1)
            halves = set() if span == 2 else self._valid_blocks(first, end, fresh)
            for start in starts:
                if start + span - 1 > last:
                    continue
                inside = [_day_of(start + n) for n in range(span)]
                known = [d for d in inside if d in versions]
                if not known or not all(d in fresh for d in known):
                    continue
                total = sum(versions[d] for d in known)
                if have.get((inside[0], span)) == total:
                    continue
                parts = tuple(
                    part
                    for part, days_of in (
                        (inside[0], inside[: span // 2]),
                        (inside[span // 2], inside[span // 2 :]),
                    )
                    if any(d in versions for d in days_of)  # a half without buckets adds nothing
                )
                if span > 2 and not all((part, span // 2) in halves for part in parts):
                    continue
                self._roll_up_block(inside[0], span, total, parts)
                built += 1
        return built

    def _roll_up_block(self, day: str, span: int, versions: int, parts: tuple[str, ...]) -> None:
        merger = Merger()
        shares: dict[str, dict[str, list[int]]] = {}
        for part in parts:
            if span == 2:
                if self.run(
                    "SELECT 1 FROM history_fleet_days WHERE day = ? AND meta IS NOT NULL", (part,)
                ):
                    merger.add(*self._fleet_unit(part, shares))
            else:
                merger.add(*self._block_unit(part, span // 2, shares))
        rows = digest_rows(merger.digest())
        with self._transaction():
            self.run(
                "DELETE FROM history_fleet_block_classes WHERE day = ? AND span = ?", (day, span)
            )
            self.run("DELETE FROM history_fleet_blocks WHERE day = ? AND span = ?", (day, span))
            self._insert(
                "history_fleet_block_classes",
                ("day", "span", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state",
                 "hosts"),
                [
                    (day, span, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state,
                     pack(shares.get(c.class_id, {})))
                    for c in rows.classes
                ],
            )  # fmt: skip
            self.run(
                "INSERT INTO history_fleet_blocks (day, span, versions, events, query_time,"
                " qt_sketch, meta, rolled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (day, span, versions, rows.events, rows.query_time, rows.qt_sketch, rows.meta,
                 stamp(dt.datetime.now())),
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
                ("host", "day", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state"),
                [
                    (host, day, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state)
                    for c in rows.classes
                ],
            )
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
        for name in names:
            merger.add(*self._day_unit(name, day, shares))
        rows = digest_rows(merger.digest())
        with self._transaction():
            self.run("DELETE FROM history_fleet_classes WHERE day = ?", (day,))
            self._insert(
                "history_fleet_classes",
                ("day", "class_id", "count", "query_time", "qt_max", "qt_sketch", "state", "hosts"),
                [
                    (day, c.class_id, c.count, c.query_time, c.qt_max, c.qt_sketch, c.state,
                     pack(shares.get(c.class_id, {})))
                    for c in rows.classes
                ],
            )  # fmt: skip
            self.run(
                "UPDATE history_fleet_days SET events = ?, query_time = ?, qt_sketch = ?,"
                " meta = ?, hosts = ?, rolled_at = ?,"
                " stale = CASE WHEN version = ? THEN 0 ELSE 1 END WHERE day = ?",
                (rows.events, rows.query_time, rows.qt_sketch, rows.meta, len(names),
                 stamp(dt.datetime.now()), version, day),
            )  # fmt: skip

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
                for table in ("history_classes", "history_buckets"):
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
                for table in ("history_classes", "history_buckets"):
                    self.run(
                        f"DELETE FROM {table} WHERE host = ? AND start >= ? AND start < ?",
                        (name, low, high),
                    )
                self.run("DELETE FROM history_day_classes WHERE host = ? AND day = ?", (name, day))
                self.run("DELETE FROM history_days WHERE host = ? AND day = ?", (name, day))
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
        return Retained(pruned, len(old_days))
