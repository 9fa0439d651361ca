"""``govern doctor``: can govern do its work on this server, and if not, what would fix it?

Read-only by construction: every statement here is a SELECT or SHOW.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from govern import native
from govern.connection import Connection, ConnectionSettings
from govern.privileges import (
    FeatureCheck,
    Grants,
    account_warnings,
    grant_statement,
    read_grants,
)
from govern.server import ServerInfo, current_account, detect

SCHEMA = "govern.doctor"
SCHEMA_VERSION = 1


@dataclasses.dataclass
class DoctorReport:
    connection: str
    account: str
    server: ServerInfo
    grants: Grants
    features: list[FeatureCheck]
    warnings: list[str]
    #: govern collect's sources on this server: readable from here or not (not features:
    #: a server needs only the sources it is collected from).
    sources: list[FeatureCheck] = dataclasses.field(default_factory=list)

    @property
    def all_ready(self) -> bool:
        return all(f.ready for f in self.features)

    def to_json(self) -> dict[str, Any]:
        s = self.server
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "connection": self.connection,
            "account": self.account,
            "server": {
                "flavor": s.flavor.value,
                "version": ".".join(map(str, s.version)),
                "version_string": s.version_string,
                "version_comment": s.version_comment,
                "hostname": s.variables.get("hostname"),
                "read_only": s.read_only,
                "binlog": s.binlog_enabled,
            },
            "slow_log": {
                "enabled": s.slow_log_enabled,
                "variable": s.slow_log_variable,
                "file": s.slow_log_file,
                "log_output": s.log_output,
                "long_query_time": s.long_query_time,
                "session_switch": s.session_slow_log_switch,
                "session_long_query_time": s.session_long_query_time,
                "log_slow_rate_limit": _int_or_none(s.variables.get("log_slow_rate_limit")),
                "min_examined_row_limit": _int_or_none(s.variables.get("min_examined_row_limit")),
            },
            "query_cache": {
                "available": s.has_query_cache,
                "type": s.query_cache_type,
                "size": _int_or_none(s.variables.get("query_cache_size"))
                if s.has_query_cache
                else None,
            },
            "event_scheduler": s.event_scheduler,
            "replication": {
                "is_replica": s.is_replica,
                "lag_seconds": s.replica_lag_seconds,
                "error": s.replica_status_error,
                "channels": [dataclasses.asdict(r) for r in s.replicas or ()],
            },
            "capabilities": {
                "row_alias": s.row_alias,
                "value_function": s.value_function,
                "values_function_deprecated": s.values_function_deprecated,
                "metadata_lock_info": s.has_metadata_lock_info,
                "max_allowed_packet": s.max_allowed_packet,
            },
            "digest_engine": dict(zip(("name", "detail"), native.engine(), strict=True)),
            "features": [dataclasses.asdict(f) for f in self.features],
            "collect_sources": [dataclasses.asdict(f) for f in self.sources],
            "all_ready": self.all_ready,
            "warnings": self.warnings,
        }


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def check_features(
    server: ServerInfo, grants: Grants, user: str, host: str, *, local: bool
) -> list[FeatureCheck]:
    """Each feature's readiness from what the server is and what the account holds."""
    set_global = server.set_global_privileges
    can_set_global = grants.has_any(set_global)
    features = []

    session = FeatureCheck(
        "run.session", "govern run, session mode (the job's own sessions opt out)"
    )
    if warning := server.slow_log_global_control_warning:
        session.need(warning, "SET GLOBAL slow_query_log_use_global_control = '';")
    if server.session_slow_log_switch:
        session.notes.append("any account may turn its own session's slow log off")
    else:
        session.notes.append("the job's sessions raise their own long_query_time")
    features.append(session)

    global_mode = FeatureCheck("run.global", "govern run, global and threshold modes")
    if not can_set_global:
        global_mode.need(
            f"SET GLOBAL needs {' or '.join(set_global)}",
            grant_statement(set_global[0], user, host),
        )
    features.append(global_mode)

    deadman = FeatureCheck("run.deadman", "server-side dead-man switch (one-shot EVENT)")
    if server.event_scheduler == "DISABLED":
        deadman.need(
            "event_scheduler is DISABLED (only a restart with event_scheduler=ON changes that)",
            "event_scheduler = ON   # in the server's my.cnf, then restart",
        )
    elif server.event_scheduler != "ON":
        deadman.need("event_scheduler is OFF", "SET GLOBAL event_scheduler = ON;")
    if not grants.on_any_schema("EVENT"):
        deadman.need("creating events needs EVENT", grant_statement("EVENT", user, host))
    if not can_set_global:
        deadman.need(
            f"the event's definer must hold {' or '.join(set_global)} to restore the log",
            grant_statement(set_global[0], user, host),
        )
    if server.is_replica or server.read_only:
        deadman.need("the server is a replica or read_only: govern never writes to it")
    deadman.notes.append("the watchdog process restores without it; this is the second layer")
    features.append(deadman)

    liveness = FeatureCheck("run.liveness", "overlapping runs and blind-connection listing")
    if not grants.has("PROCESS"):
        liveness.need(
            "seeing other sessions (holders, blind connections) needs PROCESS",
            grant_statement("PROCESS", user, host),
        )
    if server.is_mariadb and not server.has_metadata_lock_info:
        liveness.notes.append(
            "INSTALL SONAME 'metadata_lock_info' lets `govern status` name the runs of other hosts"
        )
    features.append(liveness)

    replicas = FeatureCheck("schedule.replica", "scheduler on replicas (lag guard)")
    if server.replicas is None:
        replicas.need(
            f"reading replica status needs {' or '.join(server.replica_status_privileges)}",
            grant_statement(server.replica_status_privileges[0], user, host),
        )
    elif not server.replicas:
        replicas.notes.append("this server is not a replica; the lag guard has nothing to read")
    features.append(replicas)

    digest = FeatureCheck("digest.server_log", "digest of the server's slow log file")
    log_file = server.slow_log_file
    if "FILE" not in server.log_output.upper():
        digest.need(
            f"log_output={server.log_output} writes no slow log file",
            "SET GLOBAL log_output = 'FILE';",
        )
    if not log_file:
        digest.need("the server reports no slow log file")
    elif not local:
        digest.need(f"{log_file} is on the server host; run govern there or copy the file")
    else:
        path = log_file
        if not os.path.isabs(path):
            digest.notes.append(f"{log_file} is relative to the server's datadir")
        elif not os.path.exists(path):
            digest.notes.append(f"{path} does not exist yet (nothing logged so far)")
        elif not os.access(path, os.R_OK):
            digest.need(
                f"{path} is not readable by this user",
                f"chmod o+r {path}  # or run as the mysql user",
            )
    features.append(digest)
    return features


def warnings_for(server: ServerInfo) -> list[str]:
    out = []
    if server.log_output.upper() == "NONE":
        out.append("log_output=NONE: nothing is logged although the slow log reads ON")
    for name in ("log_slow_rate_limit",):
        value = _int_or_none(server.variables.get(name))
        if value and value > 1:
            out.append(f"{name}={value}: the slow log keeps 1 event in {value}")
    examined = _int_or_none(server.variables.get("min_examined_row_limit"))
    if examined:
        out.append(f"min_examined_row_limit={examined}: cheap queries are never logged")
    if server.replicas:
        for channel in server.replicas:
            if not (channel.io_running and channel.sql_running):
                stopped = [
                    name
                    for name, running in (("IO", channel.io_running), ("SQL", channel.sql_running))
                    if not running
                ]
                threads = f"{' and '.join(stopped)} thread{'s' if len(stopped) > 1 else ''}"
                detail = (
                    f": {channel.last_error}" if channel.last_error else f" ({threads} not running)"
                )
                out.append(f"replication from {channel.source_host} is stopped{detail}")
    return out


def run_doctor(conn: Connection, settings: ConnectionSettings) -> DoctorReport:
    """Detect the server, read the account's grants, and judge every feature."""
    server = detect(conn)
    grants = read_grants(conn)
    user, host = current_account(conn)
    local = settings.uses_socket or (settings.host or "localhost") in (
        "localhost",
        "127.0.0.1",
        "::1",
    )
    from govern.collect.readiness import collect_features

    return DoctorReport(
        connection=settings.describe(),
        account=f"'{user}'@'{host}'",
        server=server,
        grants=grants,
        features=check_features(server, grants, user, host, local=local),
        warnings=warnings_for(server) + account_warnings(server, grants),
        sources=collect_features(conn, server, user, host, local=local),
    )
