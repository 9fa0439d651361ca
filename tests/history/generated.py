"""A history store of generated buckets (slow logs written per hour): two hosts, hours over seven
days and a window; for the regressions and trends tests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from govern.digest.document import full_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_bytes
from govern.history.store import open_store

UNTIL = datetime(2026, 11, 27, 6, 0)
CHANGED = UNTIL - timedelta(hours=5)
FAST = "SELECT name FROM users WHERE id = 7"
SLOW = "SELECT SUM(amount) FROM orders WHERE customer = 42"


def hour_log(at: datetime, times: dict[str, float], count: int = 30) -> bytes:
    """A MariaDB slow log of one hour: ``count`` events of each statement."""
    lines = [f"# Time: {at:%y%m%d %H:%M:%S}"]
    for statement, seconds in times.items():
        for n in range(count):
            lines += [
                "# User@Host: app[app] @ localhost []",
                "# Thread_id: 7  Schema: app  QC_hit: No",
                f"# Query_time: {seconds * (1 + n / 100):.6f}  Lock_time: 0.000000"
                "  Rows_sent: 1  Rows_examined: 1",
                f"SET timestamp={int(at.timestamp())};",
                f"{statement};",
            ]
    return ("\n".join(lines) + "\n").encode()


def fill(path: Path | str, *, slowed: set[str], new_on: set[str] = frozenset()) -> None:
    """Hosts db1 and db2, baseline hours over 7 days and the window's last 8 hours; the
    hosts in ``slowed`` run SLOW 20 times slower from CHANGED on. ``path``: a SQLite file,
    or a store URL."""
    store = open_store(path if isinstance(path, str) else f"sqlite:{path}")
    try:
        hours = [UNTIL - timedelta(days=day, hours=3) for day in range(2, 8)]
        hours += [UNTIL - timedelta(hours=back) for back in range(8, 0, -1)]
        for host in ("db1", "db2"):
            for at in hours:
                times = {FAST: 0.0005, SLOW: 0.004}
                if host in slowed and at >= CHANGED:
                    times[SLOW] = 0.080
                if host in new_on and at >= CHANGED:
                    times["DELETE FROM carts WHERE created < NOW()"] = 0.001
                document = full_document(
                    digest_bytes(hour_log(at, times), DigestOptions(host=host))
                )
                store.write(
                    host, f"{at:%Y-%m-%d %H:%M:%S}", json.loads(json.dumps(document, default=list))
                )
    finally:
        store.close()
