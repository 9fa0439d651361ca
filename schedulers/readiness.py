"""``[ready_when]``: wait, before the night, until a read-only query returns true.

The query is one SELECT, WITH or SHOW statement (checked when the catalog is read, as the
sizing query is: DDL would commit a read-only transaction) and runs inside ``START
TRANSACTION READ ONLY`` (rolled back, ``sql_log_bin = 0``), on the server it names
(a worker or the primary; default the sizing server), every ``interval`` until its first
column is true (non-zero, non-empty, not NULL) or ``timeout`` has passed. A query error is
"not ready yet" (the table the ETL fills may not exist yet) and is kept as the reason, except
one that can never come right: a syntax error, or a write refused by the read-only
transaction, fails at once (exit 2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from decimal import Decimal

import pymysql

from govern.connection import Connection, error_text
from govern.errors import ConfigError, ServerError
from govern.schedulers.catalog import Catalog, ReadyWhen

#: MariaDB/MySQL errors a later poll cannot fix: a parse error, a write in a read-only trx,
#: an unknown column or function (the table the ETL fills may yet appear; a typo will not).
_NEVER = {1064, 1792, 1054, 1305, 1149}


@dataclasses.dataclass(frozen=True)
class Readiness:
    ready: bool
    polls: int
    waited_s: float
    reason: str  # what the last poll saw

    def to_json(self) -> dict[str, object]:
        return {
            "ready": self.ready,
            "polls": self.polls,
            "waited_s": round(self.waited_s, 3),
            "last": self.reason,
        }


def truthy(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, bytes | bytearray):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip() not in ("", "0")
    if isinstance(value, int | float | Decimal):
        return value != 0
    return bool(value)


def poll_once(conn: Connection, spec: ReadyWhen) -> tuple[bool, str]:
    """(ready, what was seen): one read-only run of the query."""
    with conn.cursor() as cur:
        with contextlib.suppress(pymysql.err.MySQLError):  # no privilege: the text check holds
            cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("START TRANSACTION READ ONLY")
        try:
            cur.execute(spec.query)
            row = cur.fetchone() if cur.description else None
        finally:
            cur.execute("ROLLBACK")
    if row is None:
        return False, "no row"
    value = row[0]
    return truthy(value), f"returned {value!r}"


def wait_until_ready(
    catalog: Catalog,
    spec: ReadyWhen,
    conn: Connection,
    *,
    stopped: Callable[[], bool] = lambda: False,
    say: Callable[[str], None] = lambda message: None,
) -> Readiness:
    """Poll until ready, ``timeout``, or ``stopped()``; ConfigError for a query that cannot work."""
    start = time.monotonic()
    polls = 0
    while True:
        polls += 1
        try:
            ready, seen = poll_once(conn, spec)
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code in _NEVER:
                raise ConfigError(
                    f"{catalog.path}:{spec.line}: ready_when query: {error_text(exc)}"
                ) from None
            if code is None or code >= 2000:  # the client lost the server
                raise ServerError(f"ready_when query: {error_text(exc)}") from None
            ready, seen = False, f"error {error_text(exc)}"
        waited = time.monotonic() - start
        if ready:
            return Readiness(True, polls, waited, seen)
        if polls == 1:
            say(f"not ready yet ({seen}): polling every {spec.interval:g}s for {spec.timeout:g}s")
        left = spec.timeout - waited
        if left <= 0 or stopped():
            return Readiness(False, polls, waited, seen)
        end = time.monotonic() + min(spec.interval, left)
        while time.monotonic() < end and not stopped():
            time.sleep(min(0.1, max(end - time.monotonic(), 0)))
