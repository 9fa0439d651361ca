"""Which server the sizing query reads: lag-checked like a lane, with a fallback, or none.

A replica whose SQL thread stopped answers the sizing query happily, with yesterday's
cache table: no keys for tonight, and a night that runs 2 of 42 jobs and says ``ok``.
So the sizing read is held to the lag guard's rule before it is sent: a replica whose
lag is unknown (replication stopped) or above ``max_lag`` is refused, and the next server
of the fallback list is tried (by default the other workers in catalog order; the
primary only when the list names it). When none is fit, the night is refused with every
server's reason (docs/design/scheduling.md, "Failing loudly").
"""

from __future__ import annotations

import dataclasses

from govern.connection import Connection
from govern.errors import ServerError
from govern.schedulers.catalog import Catalog
from govern.schedulers.workers import ServerPool
from govern.server import ServerInfo, detect
from govern.throttle.checks import ReplicaLag, trend_window
from govern.throttle.links import Link

#: The sizing read's max_lag when neither [sizing] nor [lag_guard] sets one.
DEFAULT_MAX_LAG = 60.0


@dataclasses.dataclass
class SizingRead:
    server: str | None  # the server the sizing query reads; None when none is fit
    conn: Connection | None
    notes: list[str]  # servers passed over, and why (warnings of the plan)
    refusal: str | None = None  # why no server could be read: the night fails


def needs_server(catalog: Catalog) -> bool:
    return catalog.sizing.query is not None or any(j.rows_from_table for j in catalog.jobs)


def candidates(catalog: Catalog, pool: ServerPool) -> list[str]:
    """The sizing server, then its fallbacks: the named ones, or every other worker."""
    first = catalog.sizing.server or next(
        (w.spec.name for w in pool.usable()), catalog.workers[0].name
    )
    fallback = catalog.sizing.fallback
    if fallback is None:
        fallback = tuple(w.name for w in catalog.workers)
    return list(dict.fromkeys([first, *fallback]))


def choose_sizing_server(catalog: Catalog, pool: ServerPool) -> SizingRead:
    """The first candidate that is reachable and not a stopped or lagging replica."""
    max_lag = catalog.sizing.max_lag
    if max_lag is None:
        max_lag = catalog.lag_guard.max_lag if catalog.lag_guard else DEFAULT_MAX_LAG
    refused: list[str] = []
    for name in candidates(catalog, pool):
        conn, why = _fit(catalog, pool, name, max_lag)
        if conn is not None:
            notes = [f"sizing read refused on {r}: read from {name} instead" for r in refused]
            return SizingRead(name, conn, notes)
        refused.append(f"{name} ({why})")
    return SizingRead(
        None,
        None,
        [],
        "no server is fit for the sizing read, tonight's sizes would be stale or missing: "
        + "; ".join(refused),
    )


def _fit(
    catalog: Catalog, pool: ServerPool, name: str, max_lag: float
) -> tuple[Connection | None, str]:
    """A connection to ``name`` if the sizing query may read there, else why not."""
    info: ServerInfo | None
    if name == "primary":
        try:
            conn = pool.connection_for("primary")
        except ServerError as exc:
            return None, exc.message
        if conn is None:
            return None, "the catalog has no [primary]"
        info = detect(conn)
    else:
        worker = pool.worker(name)
        if not worker.usable or worker.conn is None:
            return None, f"left out: {worker.error}"
        conn, info = worker.conn, worker.info
    assert info is not None
    if info.is_replica is False:
        return conn, ""
    if info.is_replica is None:
        if info.read_only:
            grant = " or ".join(info.replica_status_privileges)
            return None, (
                f"read_only and its replica status is unreadable (needs {grant}):"
                " it may be a stopped replica"
            )
        return conn, ""
    guard = catalog.lag_guard
    check = ReplicaLag(
        [Link(name, conn=conn, info=info)],
        max_lag,
        heartbeat_table=guard.heartbeat_table if guard else "percona.heartbeat",
        heartbeat_utc=guard.heartbeat_utc if guard else False,
        trend_window=trend_window(guard.check_interval if guard else 5.0),
    )
    reading = check.read()
    if reading.holds:
        return None, reading.reason
    return conn, ""
