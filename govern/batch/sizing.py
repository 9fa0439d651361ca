"""How many rows go into one statement: the batching rules as arithmetic.

Three limits, the smallest wins:

* the batch size asked for (about 100 rows: past that, gains flatten and lock
  time per statement grows);
* 65,535 placeholders per statement (error 1390 for prepared statements), so
  at most ``65535 // columns`` rows;
* the packet: a statement must stay under ``max_allowed_packet``, the smaller of
  the server's (global, and the session's copy taken at connect time) and the
  driver's own. Row sizes are bounded from above (every byte escaped), so a
  statement cut by this rule is always accepted.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

from govern.connection import Connection, query_one
from govern.server import ServerInfo

DEFAULT_BATCH_SIZE = 100
MAX_PLACEHOLDERS = 65_535
#: Room kept free in every packet for the statement's own text and the protocol header.
PACKET_HEADROOM = 4096
#: Upper bound of the literal of a number, date or NULL, with its comma.
_SMALL_LITERAL = 40


def rows_per_statement(batch_size: int, width: int) -> int:
    """``batch_size`` capped by the placeholder limit for rows of ``width`` columns."""
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    return max(1, min(batch_size, MAX_PLACEHOLDERS // max(width, 1)))


def value_bytes(value: Any) -> int:
    """An upper bound of the bytes ``value`` takes in the statement once escaped.

    Called for every value written, so the common kinds come first.
    """
    kind = value.__class__
    if kind is str:
        size = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        return 2 * size + 4
    if kind is int:
        return _SMALL_LITERAL if -(2**63) <= value < 2**64 else len(str(value)) + 4
    if kind is float or value is None or kind in _FIXED_SIZE:
        return _SMALL_LITERAL
    if kind in (bytes, bytearray):
        return 2 * len(value) + 16  # X'hex' or _binary X'hex'
    if kind is decimal.Decimal:
        return len(str(value)) + 4
    return 2 * len(str(value)) + 4  # anything else the driver turns into a string


_FIXED_SIZE = frozenset({bool, datetime.date, datetime.datetime, datetime.time, datetime.timedelta})


def row_bytes(row: Sequence[Any]) -> int:
    """An upper bound of the bytes of ``(v1, v2, …),`` for this row."""
    return sum(map(value_bytes, row)) + 4


def packet_limit(conn: Connection, server: ServerInfo) -> int:
    """The largest statement this connection may send, in bytes.

    A session copies the global ``max_allowed_packet`` when it connects, so a
    later ``SET GLOBAL`` does not reach it: take the smaller of both, and of the
    driver's own limit.
    """
    row = query_one(conn, "SELECT @@SESSION.max_allowed_packet")
    session = int(row[0]) if row and row[0] is not None else server.max_allowed_packet
    driver = int(getattr(conn, "max_allowed_packet", session) or session)
    return min(session, server.max_allowed_packet, driver)
