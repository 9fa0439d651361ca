"""What the batch writer must know about a table before it writes: read once, checked up front.

A wrong name, a key that is not unique, or a generated column should fail
before the first row is sent, with a message naming the option, rather than
as a server error in the middle of a load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from govern.batch.identifiers import quote, split_table_name
from govern.connection import Connection, query_all, query_one
from govern.errors import UsageError


@dataclasses.dataclass(frozen=True)
class TableInfo:
    """A table's columns (in order), unique keys and engine, as the server describes them."""

    schema: str
    name: str
    columns: tuple[str, ...]
    #: columns the server computes (GENERATED ALWAYS AS …): never written.
    generated: frozenset[str]
    #: index name -> its columns, for PRIMARY and every UNIQUE index.
    unique_keys: dict[str, tuple[str, ...]]
    engine: str
    transactional: bool

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def quoted(self) -> str:
        return f"{quote(self.schema)}.{quote(self.name)}"

    def column(self, name: str, what: str) -> str:
        """The table's own spelling of ``name`` (column names are case-insensitive)."""
        for column in self.columns:
            if column.lower() == name.lower():
                if column in self.generated:
                    raise UsageError(f"{what}: column {column!r} of {self.label} is generated")
                return column
        raise UsageError(f"{what}: {self.label} has no column {name!r}")

    def resolve(self, names: Iterable[str], what: str) -> tuple[str, ...]:
        """Canonical spellings of ``names``; unknown, generated or repeated names fail."""
        resolved = tuple(self.column(name, what) for name in names)
        if len(set(resolved)) != len(resolved):
            raise UsageError(f"{what}: a column is named twice ({', '.join(names)})")
        return resolved

    def require_unique_key(self, key: Sequence[str], what: str) -> None:
        """``key`` must be exactly the columns of PRIMARY or a UNIQUE index.

        Otherwise ON DUPLICATE KEY UPDATE would never match on it and every row
        would be inserted again: a silent duplicate load.
        """
        if any(set(columns) == set(key) for columns in self.unique_keys.values()):
            return
        known = "; ".join(f"{n} ({', '.join(c)})" for n, c in self.unique_keys.items()) or "none"
        raise UsageError(
            f"{what} {','.join(key)}: not the columns of a primary or unique key of "
            f"{self.label} (its unique keys: {known})"
        )


def describe(conn: Connection, table: str) -> TableInfo:
    """Read a table's columns, unique keys and engine; UsageError when it does not exist."""
    schema, name = split_table_name(table)
    if schema is None:
        row = query_one(conn, "SELECT DATABASE()")
        if not row or row[0] is None:
            raise UsageError(f"table {table!r}: no schema; write schema.table or pass --database")
        schema = str(row[0])
    rows = query_all(
        conn,
        "SELECT t.TABLE_NAME, t.ENGINE, e.TRANSACTIONS FROM information_schema.TABLES t"
        " LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE"
        " WHERE t.TABLE_SCHEMA = %s AND t.TABLE_NAME = %s",
        (schema, name),
    )
    if not rows:
        raise UsageError(f"table {schema}.{name}: no such table (or no privilege on it)")
    real_name, engine, transactions = rows[0]
    if engine is None:
        raise UsageError(f"table {schema}.{name}: a view; write to its base table")
    columns = query_all(
        conn,
        "SELECT COLUMN_NAME, EXTRA FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (schema, real_name),
    )
    keys: dict[str, list[str]] = {}
    for index, column in query_all(
        conn,
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0"
        " ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
        (schema, real_name),
    ):
        keys.setdefault(str(index), []).append(str(column))
    return TableInfo(
        schema=schema,
        name=str(real_name),
        columns=tuple(str(c) for c, _ in columns),
        generated=frozenset(str(c) for c, extra in columns if _is_generated(str(extra))),
        unique_keys={index: tuple(cols) for index, cols in keys.items()},
        engine=str(engine),
        transactional=str(transactions or "").upper() == "YES",
    )


def _is_generated(extra: str) -> bool:
    """VIRTUAL/STORED/PERSISTENT GENERATED; not MySQL 8's DEFAULT_GENERATED (an expression default)."""
    words = extra.upper()
    return any(f"{kind} GENERATED" in words for kind in ("VIRTUAL", "STORED", "PERSISTENT"))
