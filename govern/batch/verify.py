"""After a lost connection: was the batch applied? Read its rows back and compare.

A connection that dies while a batch's statement is out leaves its outcome unknown to the
client: the server may have committed it and lost only the answer, or never have seen it.
Once the server answers again, the rows of the batch are looked up by their key and
compared, column by column on the server (``<=>``, with the same conversions the insert
had), with what the batch sent: the columns it would have written, the key included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from govern.batch.identifiers import quote
from govern.connection import Connection, query_one

if TYPE_CHECKING:
    from govern.batch.writer import BatchWriter, Row


def read_back(conn: Connection, writer: BatchWriter, batch: list[Row]) -> str:
    """What the table says about ``batch``, in words: applied, not applied, or in part."""
    compared = list(writer.key) + [
        c
        for c in (writer.update if writer.on_duplicate == "update" else writer.columns)
        if c not in writer.key
    ]
    positions = [writer.columns.index(c) for c in compared]
    # A key sent twice in one batch: the table holds the last of them.
    rows = list({writer.key_of(row): row for row in batch}.values())
    match = " AND ".join(f"{quote(c)} <=> %s" for c in compared)
    found = query_one(
        conn,
        f"SELECT COUNT(*) FROM {writer.table.quoted} WHERE "
        + " OR ".join(f"({match})" for _ in rows),
        [row[i] for row in rows for i in positions],
    )
    return verdict(int(found[0]) if found else 0, len(rows))


def verdict(found: int, total: int) -> str:
    """What the read-back says about the batch, in words."""
    if found == total:
        return f"all {total} of its rows are in the table as sent: it was applied"
    if found == 0:
        return f"none of its {total} rows is in the table: it was not applied"
    return (
        f"{found} of its {total} rows are in the table as sent: part of it is (a table without"
        " transactions), or some rows were already so"
    )
