"""The servers checks read: the target (where the work writes) and its replicas.

A :class:`Link` connects on first use and drops its connection after an error,
so the next poll reconnects: a replica that restarts makes the throttler hold
("cannot reach …") for a while, never crash. Replicas are listed (an option
file, or ``host[:port]`` reached with the target's account) or found from the
primary (``SHOW SLAVE HOSTS``/``SHOW REPLICAS``, as gh-ost and pt-table-checksum
do), once, when the throttler starts. Links only read.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pymysql

from govern.connection import (
    DEFAULT_PORT,
    Connection,
    ConnectionSettings,
    connect,
    error_text,
    query_dicts,
    resolve_settings,
)
from govern.errors import ServerError, UsageError
from govern.server import ServerInfo, detect


class Link:
    """One server a check reads; owns its connection unless it was handed one."""

    def __init__(
        self,
        label: str,
        settings: ConnectionSettings | None = None,
        *,
        conn: Connection | None = None,
        info: ServerInfo | None = None,
    ) -> None:
        if settings is None and conn is None:
            raise ValueError("a link needs settings or a connection")
        self.label = label
        self.settings = settings
        self._conn = conn
        self._info = info
        self._owned = conn is None

    def connection(self) -> tuple[Connection, ServerInfo]:
        """The open connection and what the server is; raises ServerError when unreachable."""
        if self._conn is None:
            assert self.settings is not None
            self._conn = connect(self.settings, command="throttle")
            self._info = None
        if self._info is None:
            try:
                self._info = detect(self._conn)
            except pymysql.err.MySQLError as exc:
                self.broken()
                raise ServerError(f"{self.label}: {error_text(exc)}") from None
        return self._conn, self._info

    def broken(self) -> None:
        """The connection failed: forget it, to reconnect next time (a handed-in one is
        its owner's to repair)."""
        if not self._owned:
            return
        if self._conn is not None:
            with contextlib.suppress(pymysql.err.Error):
                self._conn.close()
        self._conn = None
        self._info = None

    def close(self) -> None:
        self.broken()


def address(settings: ConnectionSettings) -> str:
    """``host:port``, or the socket path: how messages name a server (never the account)."""
    if settings.uses_socket:
        return settings.effective_socket or "localhost"
    return f"{settings.host or 'localhost'}:{settings.port or DEFAULT_PORT}"


def target_link(settings: ConnectionSettings) -> Link:
    return Link(address(settings), settings)


def listed_replica(spec: str, base: ConnectionSettings | None) -> Link:
    """``replica=`` as given: an option file (its own account), or ``host[:port]``
    reached with the target's account."""
    if "/" in spec or spec.endswith(".cnf"):
        if not Path(spec).is_file():
            raise UsageError(f"replica={spec}: no such option file")
        settings = resolve_settings(defaults_file=spec)
        return Link(address(settings), settings)
    host, _, port_text = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not host:
        raise UsageError(f"replica={spec}: expected HOST[:PORT] or an option file")
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError:
        raise UsageError(f"replica={spec}: port {port_text!r} is not a number") from None
    if base is None:
        raise UsageError(f"replica={spec}: a host needs the target's account (an option file)")
    return _replica_at(base, host, port)


def _replica_at(base: ConnectionSettings, host: str, port: int) -> Link:
    # "localhost" would mean the local socket, i.e. not that replica's port.
    host = "127.0.0.1" if host == "localhost" else host
    settings = dataclasses.replace(base, host=host, port=port, socket=None)
    return Link(f"{host}:{port}", settings)


def find_replicas(target: Link) -> list[Link]:
    """The replicas registered with the target, reached with the target's account.

    A replica that did not report its host (MySQL without ``report_host``) is
    found in the processlist (its Binlog Dump thread) and assumed on the
    target's port, like pt-table-checksum's processlist method.
    """
    if target.settings is None:
        raise UsageError("finding replicas needs the target's connection settings")
    conn, info = target.connection()
    try:
        rows = query_dicts(conn, info.replica_hosts_statement)
        dumps = query_dicts(
            conn,
            "SELECT HOST FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'",
        )
    except pymysql.err.MySQLError as exc:
        raise ServerError(
            f"cannot list the replicas of {target.label} ({error_text(exc)}):"
            " grant REPLICATION MASTER ADMIN (MariaDB) or REPLICATION SLAVE (MySQL),"
            " or list them with replica=HOST:PORT"
        ) from None
    dump_hosts = [str(r["HOST"]).rsplit(":", 1)[0] for r in dumps if r.get("HOST")]
    own_port = target.settings.port or DEFAULT_PORT
    links: list[Link] = []
    seen: set[tuple[str, int]] = set()
    for row in rows:
        host = str(row.get("Host") or "")
        port = int(row.get("Port") or own_port)
        if not host and dump_hosts:
            host = dump_hosts.pop(0)
        if not host:
            raise ServerError(
                f"replica server_id {row.get('Server_id')} of {target.label} reports no host"
                " (report_host) and is not in the processlist: list the replicas with"
                " replica=HOST:PORT"
            )
        if (host, port) not in seen:
            seen.add((host, port))
            links.append(_replica_at(target.settings, host, port))
    return links
