"""Bulk reads by key: ``WHERE c IN (…)`` in chunks, never one query per key."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from govern.batch import sizing, statements
from govern.batch.table import describe
from govern.connection import Connection
from govern.server import ServerInfo, detect

DEFAULT_CHUNK = 1000


def select_in(
    conn: Connection,
    table: str,
    column: str,
    keys: Iterable[Any],
    *,
    columns: Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    server: ServerInfo | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of ``table`` whose ``column`` is one of ``keys``, as dicts, chunk by chunk.

    ``keys`` may be any iterator; at most one chunk of keys and its rows are held
    at a time. A chunk stays under the placeholder limit and the packet. Rows
    come in the server's order within a chunk, chunks in the order of ``keys``;
    a key given twice in one chunk matches once.
    """
    info = describe(conn, table)
    where = info.column(column, "column")
    wanted = info.resolve(columns, "columns") if columns else info.columns
    server = server or detect(conn, replica_status=False)
    budget = sizing.packet_limit(conn, server) - sizing.PACKET_HEADROOM - 64 * len(wanted)
    limit = max(1, min(chunk_size, sizing.MAX_PLACEHOLDERS))
    texts: dict[int, str] = {}
    chunk: list[Any] = []
    size = 0

    def run(chunk: list[Any]) -> Iterator[dict[str, Any]]:
        text = texts.get(len(chunk))
        if text is None:
            text = texts.setdefault(
                len(chunk), statements.select_in(info.quoted, wanted, where, len(chunk))
            )
        with conn.cursor() as cur:
            cur.execute(text, chunk)
            for row in cur.fetchall():
                yield dict(zip(wanted, row, strict=True))

    for key in keys:
        need = sizing.value_bytes(key)
        if chunk and (len(chunk) >= limit or size + need > budget):
            yield from run(chunk)
            chunk, size = [], 0
        chunk.append(key)
        size += need
    if chunk:
        yield from run(chunk)
