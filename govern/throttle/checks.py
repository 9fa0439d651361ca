"""What the throttler asks: each check reads one thing and says whether, and why, it holds.

Every reading names its reason with the figure and the bound (``replica lag
12.0 s on db2:3306 > 2 s (pt-heartbeat percona.heartbeat)``), so a hold is never
a mystery. A check that cannot read its figure holds, with the error as the
reason (gh-ost's rule: an unknown lag is not a small lag). A *critical* check
does not hold: it stops the work (docs/design/throttling.md, "Hold and critical").
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import pymysql

from govern import units
from govern.connection import error_text, query_one
from govern.errors import GovernError, UsageError
from govern.throttle.lag import DEFAULT_HEARTBEAT_TABLE, LagReader, LagTrend, projected_peak
from govern.throttle.links import Link


@dataclasses.dataclass(frozen=True)
class Reading:
    """One check's answer at one poll."""

    key: str  # which check: "lag", "load Threads_running", "flag_file /run/x"
    kind: str  # "lag", "load", "query" or "flag_file"
    holds: bool
    reason: str
    value: float | None = None
    bound: float | None = None
    critical: bool = False
    source: str = ""  # where the figure came from: "pt-heartbeat percona.heartbeat"…


class Check(Protocol):
    key: str

    def read(self) -> Reading: ...

    def close(self) -> None: ...


def _seconds(value: float) -> str:
    return units.duration(value, "spaced")


def trend_window(interval: float) -> float:
    """Readings the lag's growth is judged over: 2 s, or three polls when they are slower."""
    return max(2.0, 3 * interval)


class ReplicaLag:
    """Hold while any replica lags more than ``max_lag``, or is heading there.

    Heading there: the lag grows while the work writes, and the replica's backlog would
    carry it past the bound even if the writes stopped now (:func:`projected_peak`). An
    unknown lag holds too.
    """

    kind = "lag"
    key = "lag"

    def __init__(
        self,
        replicas: Sequence[Link],
        max_lag: float,
        *,
        heartbeat_table: str = DEFAULT_HEARTBEAT_TABLE,
        heartbeat_utc: bool = False,
        trend_window: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replicas = list(replicas)
        self.max_lag = max_lag
        self._clock = clock
        self._readers = {id(link): LagReader(heartbeat_table, heartbeat_utc) for link in replicas}
        self._trends = {id(link): LagTrend(trend_window) for link in replicas}

    def read(self) -> Reading:
        worst: Reading | None = None
        for link in self.replicas:
            reading = self._read_one(link)
            if reading.holds and reading.value is None:
                return reading  # unknown lag: the most pressing reason
            if worst is None or (reading.holds, reading.value or 0) > (
                worst.holds,
                worst.value or 0,
            ):
                worst = reading
        if worst is None:
            return Reading(self.key, self.kind, False, "no replica to watch", bound=self.max_lag)
        return worst

    def _read_one(self, link: Link) -> Reading:
        trend = self._trends[id(link)]
        try:
            conn, info = link.connection()
            lag = self._readers[id(link)].read(conn, info)
        except GovernError as exc:
            trend.reset()
            return self._unknown(link, exc.message)
        except pymysql.err.MySQLError as exc:
            link.broken()
            trend.reset()
            return self._unknown(link, error_text(exc))
        if lag.seconds is None:
            trend.reset()
            return dataclasses.replace(
                self._unknown(link, f"{lag.detail} ({lag.source})"), source=lag.source
            )
        growth = trend.add(self._clock(), lag.seconds)
        peak = projected_peak(lag.seconds, growth)
        bound = _seconds(self.max_lag)
        where = f"replica lag {_seconds(lag.seconds)} on {link.label}"
        if lag.seconds > self.max_lag:
            reason = f"{where} > {bound}"
        elif peak > self.max_lag:
            heading = "a replica that applies nothing" if math.isinf(peak) else _seconds(peak)
            reason = f"{where}, growing {growth:.2f} s/s: heading for {heading} > {bound}"
        else:
            reason = f"{where} <= {bound}"
        return Reading(
            self.key,
            self.kind,
            peak > self.max_lag,
            f"{reason} ({lag.source})",
            value=lag.seconds,
            bound=self.max_lag,
            source=lag.source,
        )

    def _unknown(self, link: Link, why: str) -> Reading:
        return Reading(self.key, self.kind, True, f"replica lag unknown on {link.label}: {why}")

    def close(self) -> None:
        for link in self.replicas:
            link.close()


class StatusAbove:
    """Hold (or stop, when critical) while a global status variable is above a bound."""

    kind = "load"

    def __init__(self, target: Link, variable: str, bound: float, *, critical: bool = False):
        self.target = target
        self.variable = variable
        self.bound = bound
        self.critical = critical
        self.key = f"{'critical_load' if critical else 'load'} {variable}"

    def value(self) -> float:
        """The variable now; UsageError when the server has no such status variable."""
        conn, _ = self.target.connection()
        row = query_one(conn, "SHOW GLOBAL STATUS LIKE %s", (self.variable,))
        if row is None:
            raise UsageError(
                f"{'critical_load' if self.critical else 'max_load'}: {self.target.label} has"
                f" no status variable {self.variable!r}"
            )
        try:
            return float(row[1])
        except (TypeError, ValueError):
            raise UsageError(
                f"max_load: status variable {self.variable} is not a number ({row[1]!r})"
            ) from None

    def read(self) -> Reading:
        try:
            value = self.value()
        except pymysql.err.MySQLError as exc:
            self.target.broken()
            return self._failed(error_text(exc))
        except GovernError as exc:
            return self._failed(exc.message)
        above = value > self.bound
        return Reading(
            self.key,
            self.kind,
            above and not self.critical,
            f"{self.variable} {value:g} {'>' if above else '<='} {self.bound:g}"
            f" on {self.target.label}",
            value=value,
            bound=self.bound,
            critical=above and self.critical,
        )

    def _failed(self, why: str) -> Reading:
        # A critical check that cannot read holds: stopping needs a figure, waiting does not.
        return Reading(
            self.key, self.kind, True, f"{self.variable} unknown on {self.target.label}: {why}"
        )

    def close(self) -> None:
        self.target.close()


class QueryCheck:
    """Hold while a read-only query's first value is above zero (gh-ost's --throttle-query)."""

    kind = "query"
    key = "query"

    def __init__(self, target: Link, sql: str) -> None:
        self.target = target
        self.sql = read_only_query(sql, "query")

    def read(self) -> Reading:
        try:
            conn, _ = self.target.connection()
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION READ ONLY")
                try:
                    cur.execute(self.sql)
                    row = cur.fetchone()
                finally:
                    cur.execute("COMMIT")
        except pymysql.err.MySQLError as exc:
            self.target.broken()
            return Reading(
                self.key, self.kind, True, f"the throttle query failed: {error_text(exc)}"
            )
        except GovernError as exc:
            return Reading(self.key, self.kind, True, f"the throttle query failed: {exc.message}")
        first = row[0] if row else None
        try:
            value = float(first) if first is not None else 0.0
        except (TypeError, ValueError):
            value = 1.0 if first else 0.0
        return Reading(
            self.key,
            self.kind,
            value > 0,
            f"the throttle query returned {first!r} on {self.target.label}",
            value=value,
            bound=0.0,
        )

    def close(self) -> None:
        self.target.close()


class FlagFile:
    """Hold (or stop, when critical) while a file exists: an operator's switch."""

    kind = "flag_file"

    def __init__(self, path: str, *, critical: bool = False) -> None:
        self.path = path
        self.critical = critical
        self.key = f"{'critical_flag_file' if critical else 'flag_file'} {path}"

    def read(self) -> Reading:
        exists = os.path.exists(self.path)
        return Reading(
            self.key,
            self.kind,
            exists and not self.critical,
            f"flag file {self.path} {'exists' if exists else 'is absent'}",
            critical=exists and self.critical,
        )

    def close(self) -> None:
        pass


#: Words that make a SELECT more than a read: INTO (a file or variables), FOR UPDATE,
#: LOCK IN SHARE MODE.
_NOT_A_READ = frozenset({"INTO", "UPDATE", "LOCK"})


def read_only_query(sql: str, where: str) -> str:
    """``sql`` if it is one SELECT (or WITH … SELECT) that only reads, else UsageError.

    Checked before anything is sent: a DDL statement would commit the read-only
    transaction it runs in and be binlogged.
    """
    from govern.rules.sql.split import parse_script

    statements = [s for s in parse_script(sql).statements if s.tokens]
    if len(statements) != 1:
        raise UsageError(f"{where}: expected one SELECT statement, got {len(statements)}")
    statement = statements[0]
    if statement.verb != "SELECT" or statement.words & _NOT_A_READ:
        raise UsageError(f"{where}: only a plain SELECT may run as a check: {sql.strip()[:80]!r}")
    return statement.text
