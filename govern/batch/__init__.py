"""Batched writes and reads that follow the batching rules on every server.

* :func:`upsert`: multi-row ``INSERT … ON DUPLICATE KEY UPDATE`` in the server's own form;
* :func:`insert`: multi-row INSERT; ``ignore=True`` keeps rows that already exist
  (a duplicate-safe reinsert, e.g. after a crash);
* :func:`select_in`: chunked ``WHERE key IN (…)`` reads.

Rows are dicts or sequences; any iterator is consumed batch by batch. Each batch
is one statement, committed on its own (``transaction="batch"``) or with the
rest (``"all"``); a failed batch raises :class:`BatchError` with its index and
first key, and nothing of it stays applied on a transactional engine. Given a
``throttle`` (:mod:`govern.throttle`), the writes hold between batches while it
holds; :func:`chunked_update` and :func:`chunked_delete` walk a big change over
the primary key in timed, throttled chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from govern.batch.chunked import ChunkError, ChunkResult, chunked_delete, chunked_update
from govern.batch.counts import BatchCounts
from govern.batch.rows import Row, as_tuples
from govern.batch.select import select_in
from govern.batch.sizing import DEFAULT_BATCH_SIZE
from govern.batch.writer import (
    BatchError,
    BatchResult,
    BatchWriter,
    RowTooLarge,
    Transaction,
)
from govern.connection import Connection
from govern.server import ServerInfo
from govern.throttle.throttler import Throttler

__all__ = [
    "BatchCounts",
    "BatchError",
    "BatchResult",
    "BatchWriter",
    "ChunkError",
    "ChunkResult",
    "RowTooLarge",
    "chunked_delete",
    "chunked_update",
    "insert",
    "select_in",
    "upsert",
]


def upsert(
    conn: Connection,
    table: str,
    rows: Iterable[Row],
    *,
    key: str | Sequence[str],
    update: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    transaction: Transaction = "batch",
    pad_last: bool = False,
    progress: Callable[[int], None] | None = None,
    server: ServerInfo | None = None,
    throttle: Throttler | None = None,
) -> BatchResult:
    """Insert ``rows`` or update the existing ones matched by ``key`` (a primary or unique key).

    ``update`` lists the columns a duplicate overwrites (default: every column
    written except the key; empty: leave existing rows as they are).
    ``pad_last`` fills the last short batch with copies of its last row so every
    statement has the same text (it changes nothing on the server, and the
    copies are not counted).
    """
    names, values = as_tuples(rows, columns)
    if not names:
        return BatchResult()
    keys = (key,) if isinstance(key, str) else tuple(key)
    writer = BatchWriter(
        conn,
        table,
        names,
        on_duplicate="keep" if update is not None and not update else "update",
        key=keys,
        update=update,
        batch_size=batch_size,
        transaction=transaction,
        pad_last=pad_last,
        server=server,
        throttle=throttle,
    )
    return writer.write(values, progress=progress)


def insert(
    conn: Connection,
    table: str,
    rows: Iterable[Row],
    *,
    ignore: bool = False,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    transaction: Transaction = "batch",
    progress: Callable[[int], None] | None = None,
    server: ServerInfo | None = None,
    throttle: Throttler | None = None,
) -> BatchResult:
    """Insert ``rows``; a duplicate key fails the batch, unless ``ignore``.

    ``ignore=True`` keeps rows whose key already exists (counted as unchanged).
    It is ``ON DUPLICATE KEY UPDATE c = c``, not INSERT IGNORE, which would also
    turn bad values (too long, NULL in NOT NULL) into warnings and write them.
    """
    names, values = as_tuples(rows, columns)
    if not names:
        return BatchResult()
    writer = BatchWriter(
        conn,
        table,
        names,
        on_duplicate="keep" if ignore else "fail",
        batch_size=batch_size,
        transaction=transaction,
        server=server,
        throttle=throttle,
    )
    return writer.write(values, progress=progress)
