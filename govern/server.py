"""The one place that detects what server govern talks to and what it can do there.

Everything else asks :class:`ServerInfo` for capabilities instead of comparing
versions itself, so a new server release means one change here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import pymysql

from govern.connection import Connection, error_text, query_all, query_dicts, query_one


class Flavor(StrEnum):
    MARIADB = "mariadb"
    MYSQL = "mysql"
    PERCONA = "percona"


#: Global variables govern reads once per connection; absent ones are simply missing.
WATCHED_VARIABLES = (
    "version",
    "version_comment",
    "slow_query_log",
    "log_slow_query",
    "slow_query_log_file",
    "log_slow_query_file",
    "log_output",
    "long_query_time",
    "log_slow_query_time",
    "min_examined_row_limit",
    "log_slow_rate_limit",
    "log_slow_filter",
    "log_slow_verbosity",
    "slow_query_log_use_global_control",
    "have_query_cache",
    "query_cache_type",
    "query_cache_size",
    "query_cache_limit",
    "event_scheduler",
    "read_only",
    "super_read_only",
    "log_bin",
    "server_id",
    "max_allowed_packet",
    "hostname",
    "port",
    "socket",
)

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int, int]:
    """``10.11.19-MariaDB-0+deb12u1`` → (10, 11, 19); unknown shapes → (0, 0, 0)."""
    match = _VERSION_RE.match(text.strip())
    if not match:
        return (0, 0, 0)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)))


def detect_flavor(version: str, version_comment: str) -> Flavor:
    if "mariadb" in version.lower() or "mariadb" in version_comment.lower():
        return Flavor.MARIADB
    if "percona" in version_comment.lower():
        return Flavor.PERCONA
    return Flavor.MYSQL


def _on(value: str | None) -> bool:
    return (value or "").strip().upper() in ("ON", "1", "YES", "TRUE")


@dataclasses.dataclass(frozen=True)
class ReplicaStatus:
    """What SHOW REPLICA/SLAVE STATUS said; ``lag_seconds`` is None while not replicating."""

    source_host: str
    io_running: bool
    sql_running: bool
    lag_seconds: int | None
    last_error: str
    #: the source's server_id (pt-heartbeat keys its rows by it); None when not shown
    source_server_id: int | None = None


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    """Flavor, version and the capabilities the rest of govern asks about."""

    flavor: Flavor
    version: tuple[int, int, int]
    version_string: str
    version_comment: str
    variables: Mapping[str, str]
    #: None when the account may not read replica status; empty tuple when not a replica.
    replicas: tuple[ReplicaStatus, ...] | None = None
    replica_status_error: str | None = None
    plugins: frozenset[str] = frozenset()

    # --- identity -------------------------------------------------------------------
    @property
    def is_mariadb(self) -> bool:
        return self.flavor is Flavor.MARIADB

    @property
    def label(self) -> str:
        """``MariaDB 10.11.19`` / ``MySQL 8.0.36`` / ``Percona Server 8.0.36``."""
        name = {"mariadb": "MariaDB", "mysql": "MySQL", "percona": "Percona Server"}[self.flavor]
        return f"{name} {'.'.join(map(str, self.version))}"

    @property
    def identity(self) -> str:
        """``hostname:port`` as the server reports them: one name for a server, whether
        reached through its socket, 127.0.0.1 or a remote address."""
        return f"{self.variables.get('hostname', '?')}:{self.variables.get('port', '?')}"

    @property
    def target(self) -> str:
        """The lint target name for this server, e.g. ``mariadb-10.11`` or ``mysql-8.0``."""
        family = "mariadb" if self.is_mariadb else "mysql"
        return f"{family}-{self.version[0]}.{self.version[1]}"

    # --- slow log -----------------------------------------------------------------
    @property
    def slow_log_variable(self) -> str:
        """``log_slow_query`` on MariaDB 10.11+, else ``slow_query_log`` (both work there)."""
        return "log_slow_query" if "log_slow_query" in self.variables else "slow_query_log"

    @property
    def slow_log_enabled(self) -> bool:
        value = self.variables.get("log_slow_query", self.variables.get("slow_query_log"))
        return _on(value)

    @property
    def slow_log_file(self) -> str | None:
        return self.variables.get("log_slow_query_file") or self.variables.get(
            "slow_query_log_file"
        )

    @property
    def log_output(self) -> str:
        return self.variables.get("log_output", "FILE")

    @property
    def long_query_time(self) -> float | None:
        value = self.variables.get("long_query_time") or self.variables.get("log_slow_query_time")
        return float(value) if value not in (None, "") else None

    @property
    def session_slow_log_switch(self) -> bool:
        """Any session may turn its own slow log off (MariaDB). MySQL's switch is global only."""
        return self.is_mariadb

    @property
    def session_long_query_time(self) -> bool:
        """A session's own long_query_time is honoured (not on Percona with global control)."""
        control = self.variables.get("slow_query_log_use_global_control", "").lower()
        return not ("long_query_time" in control or "all" in control.split(","))

    @property
    def slow_log_global_control_warning(self) -> str | None:
        control = self.variables.get("slow_query_log_use_global_control")
        if control and not self.session_long_query_time:
            return (
                f"slow_query_log_use_global_control={control}: session long_query_time is "
                "ignored, session mode cannot exempt a job on this server"
            )
        return None

    # --- query cache ----------------------------------------------------------------
    @property
    def has_query_cache(self) -> bool:
        """The server still has a query cache (MariaDB; MySQL before 8.0.3)."""
        if self.variables.get("have_query_cache", "").upper() == "NO":
            return False
        if self.is_mariadb:
            return True
        return self.version < (8, 0, 3)

    @property
    def query_cache_type(self) -> str | None:
        return self.variables.get("query_cache_type") if self.has_query_cache else None

    # --- events, ON DUPLICATE KEY UPDATE ----------------------------------------------
    @property
    def event_scheduler(self) -> str:
        """ON, OFF or DISABLED (DISABLED cannot be turned on at runtime)."""
        return self.variables.get("event_scheduler", "OFF").upper()

    @property
    def row_alias(self) -> bool:
        """``INSERT … VALUES (…) AS new ON DUPLICATE KEY UPDATE c = new.c`` (MySQL 8.0.19+)."""
        return not self.is_mariadb and self.version >= (8, 0, 19)

    @property
    def values_function_deprecated(self) -> bool:
        """``VALUES(col)`` in ON DUPLICATE KEY UPDATE warns (MySQL 8.0.20+)."""
        return not self.is_mariadb and self.version >= (8, 0, 20)

    @property
    def value_function(self) -> bool:
        """``VALUE(col)`` (MariaDB 10.3+)."""
        return self.is_mariadb and self.version >= (10, 3, 0)

    @property
    def max_allowed_packet(self) -> int:
        return int(self.variables.get("max_allowed_packet") or 16 * 1024 * 1024)

    # --- replication and writes ---------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return _on(self.variables.get("read_only")) or _on(self.variables.get("super_read_only"))

    @property
    def is_replica(self) -> bool | None:
        """True/False, or None when the account may not read replica status."""
        if self.replicas is None:
            return None
        return len(self.replicas) > 0

    @property
    def replica_lag_seconds(self) -> int | None:
        """Worst lag over all replication channels; None if unknown or not replicating."""
        if not self.replicas:
            return None
        lags = [r.lag_seconds for r in self.replicas]
        if any(lag is None for lag in lags):
            return None
        return max(lag for lag in lags if lag is not None)

    @property
    def binlog_enabled(self) -> bool:
        return _on(self.variables.get("log_bin"))

    @property
    def set_global_privileges(self) -> tuple[str, ...]:
        """Any one of these lets an account ``SET GLOBAL`` the slow-log variables."""
        if self.is_mariadb:
            return ("SUPER",)
        if self.version >= (8, 0, 0):
            return ("SYSTEM_VARIABLES_ADMIN", "SUPER")
        return ("SUPER",)

    @property
    def read_only_bypass_privileges(self) -> tuple[str, ...]:
        """Privileges that let an account write although read_only is ON. MariaDB 10.11
        split READ_ONLY ADMIN out of SUPER (measured: SUPER alone is refused there);
        MySQL's super_read_only stops everyone."""
        if self.is_mariadb:
            if self.version >= (10, 11, 0):
                return ("READ_ONLY ADMIN",)
            return ("READ_ONLY ADMIN", "SUPER") if self.version >= (10, 5, 2) else ("SUPER",)
        if _on(self.variables.get("super_read_only")):
            return ()
        return ("SUPER", "CONNECTION_ADMIN")

    @property
    def replica_status_privileges(self) -> tuple[str, ...]:
        if self.is_mariadb and self.version >= (10, 5, 0):
            return ("SLAVE MONITOR", "REPLICA MONITOR", "SUPER")
        return ("REPLICATION CLIENT", "SUPER")

    @property
    def replica_status_statement(self) -> str:
        if self.is_mariadb:
            return "SHOW ALL SLAVES STATUS" if self.version >= (10, 0, 0) else "SHOW SLAVE STATUS"
        if self.version >= (8, 0, 22):
            return "SHOW REPLICA STATUS"
        return "SHOW SLAVE STATUS"

    @property
    def replica_hosts_statement(self) -> str:
        """Lists the replicas registered with this server (as a primary)."""
        if not self.is_mariadb and self.version >= (8, 0, 22):
            return "SHOW REPLICAS"
        return "SHOW SLAVE HOSTS"

    @property
    def statement_time_variable(self) -> str | None:
        """MariaDB's ``max_statement_time`` aborts any statement server-side; MySQL's
        ``max_execution_time`` covers read-only SELECTs only, so None there."""
        return "max_statement_time" if self.is_mariadb else None

    @property
    def has_metadata_lock_info(self) -> bool:
        """MariaDB's METADATA_LOCK_INFO view lists user-lock holders (plugin installed)."""
        return "metadata_lock_info" in self.plugins


def read_variables(conn: Connection, names: tuple[str, ...] = WATCHED_VARIABLES) -> dict[str, str]:
    placeholders = ", ".join(["%s"] * len(names))
    rows = query_all(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", names)
    return {str(name).lower(): "" if value is None else str(value) for name, value in rows}


def read_replica_status(
    conn: Connection, statement: str
) -> tuple[tuple[ReplicaStatus, ...] | None, str | None]:
    """All replication channels, or (None, reason) when the account may not look."""
    try:
        rows = query_dicts(conn, statement)
    except pymysql.err.MySQLError as exc:
        return None, error_text(exc)
    channels = []
    for row in rows:
        lag = row.get("Seconds_Behind_Master", row.get("Seconds_Behind_Source"))
        channels.append(
            ReplicaStatus(
                source_host=str(row.get("Master_Host") or row.get("Source_Host") or ""),
                io_running=str(row.get("Slave_IO_Running") or row.get("Replica_IO_Running"))
                == "Yes",
                sql_running=str(row.get("Slave_SQL_Running") or row.get("Replica_SQL_Running"))
                == "Yes",
                lag_seconds=None if lag is None else int(lag),
                last_error=str(row.get("Last_Error") or ""),
                source_server_id=_int_or_none(
                    row.get("Master_Server_Id", row.get("Source_Server_Id"))
                ),
            )
        )
    return tuple(channels), None


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value in (None, "") else int(value)
    except (TypeError, ValueError):
        return None


def read_plugins(conn: Connection) -> frozenset[str]:
    rows = query_all(
        conn,
        "SELECT LOWER(PLUGIN_NAME) FROM information_schema.PLUGINS WHERE PLUGIN_STATUS='ACTIVE'",
    )
    return frozenset(str(r[0]) for r in rows)


def build_info(variables: Mapping[str, str], **extra: Any) -> ServerInfo:
    """ServerInfo from a variables snapshot (pure: also used for lint targets and tests)."""
    version_string = variables.get("version", "")
    comment = variables.get("version_comment", "")
    return ServerInfo(
        flavor=detect_flavor(version_string, comment),
        version=parse_version(version_string),
        version_string=version_string,
        version_comment=comment,
        variables=dict(variables),
        **extra,
    )


def detect(conn: Connection, *, replica_status: bool = True) -> ServerInfo:
    """Read-only detection: variables, plugins and (if allowed) replica status."""
    variables = read_variables(conn)
    info = build_info(variables, plugins=read_plugins(conn))
    return with_replica_status(conn, info) if replica_status else info


def with_replica_status(conn: Connection, info: ServerInfo) -> ServerInfo:
    """``info`` with the replica status read (a separate step: it is some 60 columns)."""
    replicas, error = read_replica_status(conn, info.replica_status_statement)
    return dataclasses.replace(info, replicas=replicas, replica_status_error=error)


def current_account(conn: Connection) -> tuple[str, str]:
    """(user, host) of CURRENT_USER(): the account whose privileges apply."""
    row = query_one(conn, "SELECT CURRENT_USER()")
    text = str(row[0]) if row else "@"
    user, _, host = text.rpartition("@")
    return user, host
