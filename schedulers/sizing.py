"""How big each job is tonight: the ETL's cache table of row counts, a table's estimated rows,
or a fixed number from the catalog.

The sizing query is the catalog's own SQL: it must be one SELECT, WITH or SHOW statement
(checked before it is sent: DDL would commit a read-only transaction, SET GLOBAL ignores
it), and it runs in a read-only transaction with ``sql_log_bin = 0`` anyway. Its rows are
``(key, rows)``; keys are matched to jobs (a job's ``key`` defaults to its name). Nothing
is dropped silently: jobs left without a size, keys no job claims, and rows that are not a
key and a number are all counted and reported; a count larger than any table holds is
clamped to :data:`MAX_ROWS`, with a warning, so one broken counter never costs a night.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping

import pymysql

from govern.connection import Connection, error_text, query_one
from govern.errors import ConfigError, ServerError
from govern.readonly import read_problem
from govern.schedulers.catalog import Catalog
from govern.units import plural

#: How many names a warning lists before it says "and N more".
SHOW_NAMES = 5
#: More rows than any table holds (a broken counter, BIGINT UNSIGNED's max): clamped to this.
MAX_ROWS = 10**15


@dataclasses.dataclass
class Sizes:
    rows: dict[str, int | None]  # job -> rows tonight (None: unknown)
    source: str  # where the counts came from
    unsized: list[str] = dataclasses.field(default_factory=list)
    unclaimed_keys: list[str] = dataclasses.field(default_factory=list)
    unusable_keys: list[str] = dataclasses.field(default_factory=list)  # for templates
    bad_rows: int = 0
    warnings: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "unsized": self.unsized,
            "unclaimed_keys": self.unclaimed_keys,
            "unusable_keys": self.unusable_keys,
            "bad_rows": self.bad_rows,
        }


def names_preview(names: list[str]) -> str:
    shown = ", ".join(names[:SHOW_NAMES])
    return shown + (f" and {len(names) - SHOW_NAMES} more" if len(names) > SHOW_NAMES else "")


def run_sizing_query(conn: Connection, query: str, where: str) -> tuple[dict[str, int], int]:
    """``{key: rows}`` from the cache-table query (rows of one key add up), and the
    number of rows that were not (key, number)."""
    problem = read_problem(query)
    if problem is not None:
        raise ConfigError(
            f"{where}: the sizing query must be one SELECT, WITH or SHOW statement, {problem}"
        )
    counts: dict[str, int] = {}
    bad = 0
    try:
        with conn.cursor() as cur:
            with contextlib.suppress(pymysql.err.MySQLError):  # no privilege: the check holds
                cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("START TRANSACTION READ ONLY")
            try:
                cur.execute(query)
                if cur.description is None or len(cur.description) != 2:
                    width = 0 if cur.description is None else len(cur.description)
                    raise ConfigError(
                        f"{where}: the sizing query must return 2 columns (key, rows), got {width}"
                    )
                for key, value in cur.fetchall():
                    try:
                        number = int(value)
                    except (TypeError, ValueError, OverflowError):  # NULL, text, inf
                        bad += 1
                        continue
                    if key is None or number < 0:
                        bad += 1
                        continue
                    text = key.decode() if isinstance(key, bytes) else str(key)
                    counts[text] = counts.get(text, 0) + number
            finally:
                cur.execute("COMMIT")
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        if code >= 2000:  # the client lost the server: not the query's fault
            raise ServerError(f"sizing query: {error_text(exc)}") from None
        # a syntax error, a missing table, a write refused by the read-only transaction...
        raise ConfigError(f"{where}: the sizing query failed: {error_text(exc)}") from None
    return counts, bad


def table_rows(conn: Connection, table: str) -> int | None:
    """The storage engine's row estimate for ``schema.table`` (no scan), None if absent."""
    schema, name = table.split(".", 1)
    row = query_one(
        conn,
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (schema, name),
    )
    return None if row is None or row[0] is None else int(row[0])


def measure_sizes(catalog: Catalog, conn: Connection | None, server: str) -> tuple[Catalog, Sizes]:
    """Every job's size tonight, and the catalog with its templates made into one job per
    key; ``conn`` is None when the sizing server is out of reach."""
    rows: dict[str, int | None] = {}
    sizes = Sizes(rows, source="catalog")
    counts: Mapping[str, int] = {}
    needs_server = catalog.sizing.query is not None or any(j.rows_from_table for j in catalog.jobs)
    if needs_server and conn is None:
        sizes.warnings.append(f"sizes unknown tonight: the sizing server {server} is out of reach")
    if catalog.sizing.query is not None and conn is not None:
        where = f"{catalog.path}:{catalog.sizing.line}"
        counts, sizes.bad_rows = run_sizing_query(conn, catalog.sizing.query, where)
        sizes.source = f"sizing query on {server}"
        if sizes.bad_rows:
            sizes.warnings.append(
                f"{sizes.bad_rows} rows of the sizing query were not (key, non-negative number)"
                " and were skipped"
            )
    if catalog.templates:
        if not counts:
            sizes.warnings.append(
                "no keys tonight for the templates "
                + ", ".join(f"[each.{t.name}]" for t in catalog.templates)
            )
        catalog, sizes.unusable_keys = catalog.expand(list(counts))
        if sizes.unusable_keys:
            sizes.warnings.append(
                f"{len(sizes.unusable_keys)} keys made no job: {names_preview(sizes.unusable_keys)}"
            )
    for job in catalog.jobs:
        if job.rows is not None:
            rows[job.name] = job.rows
        elif job.rows_from_table is not None:
            rows[job.name] = table_rows(conn, job.rows_from_table) if conn is not None else None
        elif catalog.sizing.query is not None:
            rows[job.name] = counts.get(job.key)
        else:
            rows[job.name] = None
        found = rows[job.name]
        if found is not None and found > MAX_ROWS:
            rows[job.name] = MAX_ROWS
            sizes.warnings.append(
                f"job {job.name}: {found} rows is more than any table holds: counted as"
                f" {MAX_ROWS:,}"
            )
    sizes.unsized = [name for name, n in rows.items() if n is None]
    claimed = {j.key for j in catalog.jobs}
    sizes.unclaimed_keys = sorted(k for k in counts if k not in claimed)
    # A job whose key is only its name may well not be in the cache table; one that
    # names a key or a table and gets no count is worth a warning.
    expected = [
        j.name
        for j in catalog.jobs
        if rows[j.name] is None and (j.key_given or j.rows_from_table is not None)
    ]
    if expected and conn is not None:
        have = "has" if len(expected) == 1 else "have"
        sizes.warnings.append(
            f"{plural(len(expected), 'job')} {have} no row count: {names_preview(expected)}"
        )
    if sizes.unclaimed_keys:
        sizes.warnings.append(
            f"{len(sizes.unclaimed_keys)} keys of the sizing query match no job: "
            f"{names_preview(sizes.unclaimed_keys)}"
        )
    return catalog, sizes
