"""Each class row's p95/p99 sketch bucket and whether its sample was explained, written
beside the row (history_classes, history_day_classes) so ``govern regressions`` can leave a
steady class's sketches and states unread.

The nearest-rank quantile of a mix of rows falls in a bucket between the lowest and the
highest of the rows' own quantile buckets (below the lowest, fewer than ``q`` of each row's
events lie; up to the highest, at least ``q`` of each row's do), so the ``MIN``/``MAX`` of
these columns over a class's rows bound its merged p95/p99 without opening a sketch
(figures.py). A row whose sketch misses some of its events has none (NULL: its class is read
the exact way), and so has a row written before migration 0008 until :func:`backfill` (run
by each collector after it writes, a bounded slice at a time) or :func:`fill` reaches it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from typing import Any

from govern import sketch
from govern.history.rows import sketch_of, state_summary

QUANTILES = (0.95, 0.99)
#: The class tables that carry the columns, and their bucket column.
TABLES = (("history_classes", "start"), ("history_day_classes", "day"))
NAMES = tuple(name for name, _ in TABLES)
COLUMNS = ("qt_p95_key", "qt_p99_key", "explained")
#: Rows per UPDATE of :func:`fill`.
BATCH = 500
#: The longest :func:`backfill` runs after a collector's write (seconds): it stops before a
#: next chunk of CHUNK rows once this is spent.
BUDGET = 0.5
#: Rows per transaction of :func:`backfill`: what it may run past its budget (about 0.1 s
#: at load 8 on MariaDB, benchmarks/history_backfill.py).
CHUNK = 100
#: Where :func:`backfill` got to: a row per class table (migration history_0009_backfill).
PROGRESS = "history_backfill"
#: Each class table's bucket heads, newest first, walked by :func:`backfill`.
HEADS = {"history_classes": "history_buckets", "history_day_classes": "history_days"}

#: (p95 bucket, p99 bucket, explained): NULL buckets when the sketch misses events.
Figures = tuple[int | None, int | None, int]


def quantile_keys(buckets: Mapping[int, int], total: int) -> tuple[int, int] | None:
    """The buckets holding the nearest-rank p95 and p99 of a sketch of ``total`` events
    (None: the sketch does not hold them all)."""
    if not buckets or sum(buckets.values()) != total:
        return None
    ranks = [max(1, -((-round(q * 1000) * total) // 1000)) for q in QUANTILES]
    found: list[int] = []
    seen = 0
    for key in sorted(buckets):
        seen += buckets[key]
        while len(found) < len(ranks) and seen >= ranks[len(found)]:
            found.append(key)
    return found[0], found[1]


def row_figures(count: int, qt_sketch: bytes | None, state: bytes) -> Figures:
    """What a class row carries beside its sketch: its p95/p99 buckets and whether its
    state holds a sample's plan."""
    keys = quantile_keys(sketch_of(qt_sketch), count)
    explained = 1 if state_summary(state)[1] else 0
    return (None, None, explained) if keys is None else (keys[0], keys[1], explained)


def value_range(low_key: int, high_key: int, qt_max: int) -> tuple[int, int]:
    """The lowest and the highest a merged quantile can be (µs) when its bucket lies between
    ``low_key`` and ``high_key``: a bucket's value clamped to the class's exact [min, max]
    (the minimum lies in the lowest bucket, so at most the top of the quantile's)."""
    return (
        min(qt_max, sketch.bucket_value(low_key)),
        min(qt_max, sketch.bucket_range(high_key)[1]),
    )


def backfill(
    store: Any, budget: float = BUDGET, clock: Callable[[], float] = time.monotonic
) -> int:
    """Give rows written before migration 0008 their columns for at most ``budget`` seconds
    (checked before each chunk of CHUNK rows): day rows first (most of a baseline), then
    hourly ones, newest buckets first (what ``govern regressions`` reads); the next call
    resumes where this one stopped (``PROGRESS`` holds the last bucket done of each table),
    and once a table is done a call costs one lookup.
    Returns the rows filled. Rows a collector older than 0008 writes after the walk passed
    their bucket stay NULL: read the exact way, or given their columns by :func:`fill`."""
    deadline = clock() + budget
    filled = 0
    progress = {
        str(name): (bucket, host)
        for name, bucket, host, done in store.run(
            f"SELECT name, bucket, host, done FROM {PROGRESS}"
        )
        if not done
    }
    for table, column in reversed(TABLES):  # day rows first: most of a baseline
        if table not in progress:
            continue
        bucket, host = progress[table]
        while clock() < deadline:
            # the next bucket heads (newest first) after the last one done
            after = "" if bucket is None else f" WHERE {column} < ? OR ({column} = ? AND host < ?)"
            heads = store.run(
                f"SELECT {column}, host FROM {HEADS[table]}{after}"
                f" ORDER BY {column} DESC, host DESC LIMIT 20",
                () if bucket is None else (bucket, bucket, host),
            )
            if not heads:
                store.run(f"UPDATE {PROGRESS} SET done = 1 WHERE name = ?", (table,))
                break
            for when, name in heads:
                if clock() >= deadline:
                    return filled
                rows, finished = _fill_head(store, table, column, name, when, clock, deadline)
                filled += rows
                if not finished:  # out of time inside the bucket: resumed there next time
                    return filled
                bucket, host = _text(when), str(name)
    return filled


def _fill_head(
    store: Any,
    table: str,
    column: str,
    host: Any,
    when: Any,
    clock: Callable[[], float],
    deadline: float,
) -> tuple[int, bool]:
    """One bucket's rows that lack the columns, a chunk per transaction, the bucket recorded
    as done with its last chunk: the rows filled, and whether it was done in time."""
    covering = f"{table} " + (
        f"FORCE INDEX ({table}_figures)"
        if store.dialect == "mysql"
        else f"INDEXED BY {table}_figures"
    )
    lock = " FOR UPDATE" if store.dialect == "mysql" else ""
    filled = 0
    while True:
        if filled and clock() >= deadline:
            return filled, False
        with store._transaction():
            # which rows lack them, from the covering index (a bucket written since 0008:
            # one short index range, no state read), then those rows locked and read
            todo = [
                str(row[0])
                for row in store.run(
                    f"SELECT class_id FROM {covering} WHERE host = ? AND {column} = ?"
                    f" AND explained IS NULL LIMIT {CHUNK}",
                    (host, when),
                )
            ]
            rows = (
                store.run(
                    f"SELECT class_id, count, qt_sketch, state FROM {table}"
                    f" WHERE host = ? AND {column} = ? AND explained IS NULL AND class_id IN"
                    f" ({', '.join(['?'] * len(todo))}){lock}",
                    (host, when, *todo),
                )
                if todo
                else []
            )
            if rows:
                _update(store, table, column, host, when, rows)
            filled += len(rows)
            if len(todo) < CHUNK:
                store.run(
                    f"UPDATE {PROGRESS} SET bucket = ?, host = ? WHERE name = ?",
                    (_text(when), host, table),
                )
                return filled, True


def _text(value: Any) -> str:
    """A bucket's start or day as the store's text (pymysql returns datetimes and dates)."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value.isoformat() if isinstance(value, dt.date) else str(value)


def fill(
    store: Any,
    since: str | None = None,
    progress: Callable[[int], None] | None = None,
    tables: tuple[str, ...] = NAMES,
) -> int:
    """Write the columns of rows that lack them (written before migration 0008), a bucket
    (host and hour or day) at a time, each in its own transaction: stopped, it resumes where
    it was. ``since``: only buckets from then (a stamp or day); ``tables``: only these.
    Returns the rows filled."""
    filled = 0
    for table, column in TABLES:
        if table not in tables:
            continue
        low = since[: 10 if column == "day" else 19] if since else ""
        todo = store.run(
            f"SELECT DISTINCT host, {column} FROM {table}"
            f" WHERE explained IS NULL AND {column} >= ? ORDER BY {column}, host",
            (low or "1970-01-01",),
        )
        for host, when in todo:
            with store._transaction():  # the rows locked: a rewrite of the bucket waits
                rows = store.run(
                    f"SELECT class_id, count, qt_sketch, state FROM {table}"
                    f" WHERE host = ? AND {column} = ? AND explained IS NULL"
                    + (" FOR UPDATE" if store.dialect == "mysql" else ""),
                    (host, when),
                )
                for index in range(0, len(rows), BATCH):
                    chunk = rows[index : index + BATCH]
                    _update(store, table, column, host, when, chunk)
            filled += len(rows)
            if progress:
                progress(filled)
    return filled


def _update(
    store: Any, table: str, column: str, host: Any, when: Any, rows: list[tuple[Any, ...]]
) -> None:
    """One statement for a chunk of a bucket's locked rows: on MariaDB an upsert that only
    ever updates (half the time of an UPDATE with a CASE per column), on SQLite the CASE."""
    values = [(str(row[0]), row_figures(int(row[1]), row[2], row[3])) for row in rows]
    if store.dialect == "mysql":
        store.run(
            f"INSERT INTO {table} (host, {column}, class_id, count, query_time, qt_max, state,"
            f" {', '.join(COLUMNS)}) VALUES "
            + ", ".join(["(?, ?, ?, 0, 0, 0, '', ?, ?, ?)"] * len(values))
            + " ON DUPLICATE KEY UPDATE "
            + ", ".join(f"{name} = VALUES({name})" for name in COLUMNS),
            [value for class_id, figures in values for value in (host, when, class_id, *figures)],
        )
        return
    sets, args = [], []
    for place, name in enumerate(COLUMNS):
        sets.append(f"{name} = CASE class_id" + " WHEN ? THEN ?" * len(values) + " END")
        for class_id, figures in values:
            args += [class_id, figures[place]]
    marks = ", ".join(["?"] * len(values))
    store.run(
        f"UPDATE {table} SET {', '.join(sets)}"
        f" WHERE host = ? AND {column} = ? AND class_id IN ({marks})",
        (*args, host, when, *(class_id for class_id, _ in values)),
    )
