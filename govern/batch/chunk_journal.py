"""Where a chunked walk got to, in the state store: the resume point after a crash.

A walk is named by what it does (server, table, statement, parameters): running
the same change again while an earlier run of it is unfinished goes on after
that run's last committed chunk, up to the end key the first run fixed. Each
chunk is written twice: its upper key as *in flight* before the statement, then
as the last committed key after the COMMIT. A chunk found in flight was perhaps
committed, perhaps not; it runs again (docs/design/throttling.md, "Resume").
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from govern.state import StateStore, utcnow

RUNNING = "running"
STOPPED = "stopped"
DONE = "done"

Key = tuple[Any, ...]


def walk_id(server: str, table: str, statement: str, params: Sequence[Any]) -> str:
    text = json.dumps([server, table, statement, [encode_value(p) for p in params]])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def encode_value(value: Any) -> Any:
    """A key value as JSON that binds back to the same value (bytes and dates tagged)."""
    if isinstance(value, bytes | bytearray):
        return {"b64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return {"t": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"s": value.total_seconds()}
    if isinstance(value, decimal.Decimal):
        return {"d": str(value)}
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "b64" in value:
            return base64.b64decode(value["b64"])
        if "d" in value:
            return decimal.Decimal(value["d"])
        if "s" in value:
            return datetime.timedelta(seconds=value["s"])
        return value["t"]  # the server reads the ISO text back as the same temporal value
    return value


def _dump(key: Key | None) -> str | None:
    return None if key is None else json.dumps([encode_value(v) for v in key])


def _load(text: str | None) -> Key | None:
    return None if text is None else tuple(decode_value(v) for v in json.loads(text))


@dataclasses.dataclass
class Walk:
    id: str
    end_key: Key | None
    last_key: Key | None = None
    in_flight: Key | None = None
    chunks: int = 0
    rows: int = 0
    scanned: int = 0
    resumed: bool = False


class ChunkJournal:
    """The walks of one state store; each write is one SQLite commit."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        # Two commits a chunk: WAL with synchronous=NORMAL survives the process being killed
        # (what the journal is for) without an fsync each (10 ms a chunk measured otherwise).
        store.db.execute("PRAGMA synchronous = NORMAL")

    def unfinished(self, walk_id: str) -> Walk | None:
        row = self.store.db.execute(
            "SELECT * FROM chunk_walks WHERE id = ? AND state != ?", (walk_id, DONE)
        ).fetchone()
        if row is None:
            return None
        return Walk(
            id=walk_id,
            end_key=_load(row["end_key"]),
            last_key=_load(row["last_key"]),
            in_flight=_load(row["in_flight"]),
            chunks=int(row["chunks"]),
            rows=int(row["rows"]),
            scanned=int(row["scanned"]),
            resumed=True,
        )

    def begin(
        self, walk: Walk, server: str, table: str, statement: str, key_columns: Sequence[str]
    ) -> None:
        now = utcnow()
        self.store.db.execute(
            "INSERT INTO chunk_walks (id, server, table_name, statement, key_columns, end_key,"
            " state, started_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET end_key = excluded.end_key, last_key = NULL,"
            " in_flight = NULL, chunks = 0, rows = 0, scanned = 0, state = excluded.state,"
            " started_at = excluded.started_at, updated_at = excluded.updated_at,"
            " finished_at = NULL",
            (
                walk.id,
                server,
                table,
                statement,
                json.dumps(list(key_columns)),
                _dump(walk.end_key),
                RUNNING,
                now,
                now,
            ),
        )

    def resume(self, walk: Walk) -> None:
        self.store.db.execute(
            "UPDATE chunk_walks SET state = ?, updated_at = ? WHERE id = ?",
            (RUNNING, utcnow(), walk.id),
        )

    def in_flight(self, walk: Walk, upper: Key) -> None:
        walk.in_flight = upper
        self.store.db.execute(
            "UPDATE chunk_walks SET in_flight = ?, updated_at = ? WHERE id = ?",
            (_dump(upper), utcnow(), walk.id),
        )

    def committed(self, walk: Walk) -> None:
        walk.in_flight = None
        self.store.db.execute(
            "UPDATE chunk_walks SET last_key = ?, in_flight = NULL, chunks = ?, rows = ?,"
            " scanned = ?, updated_at = ? WHERE id = ?",
            (_dump(walk.last_key), walk.chunks, walk.rows, walk.scanned, utcnow(), walk.id),
        )

    def finish(self, walk: Walk, state: str) -> None:
        now = utcnow()
        self.store.db.execute(
            "UPDATE chunk_walks SET state = ?, updated_at = ?, finished_at = ? WHERE id = ?",
            (state, now, now if state == DONE else None, walk.id),
        )
