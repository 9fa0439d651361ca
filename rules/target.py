"""Lint targets: ``mariadb-10.11``, ``mysql-8.0``, ``mysql-5.7.44`` … or a live server.

A target becomes a :class:`govern.server.ServerInfo` built from a version
snapshot, so rules ask the same capability properties (``has_query_cache``,
``row_alias``, ``max_allowed_packet`` …) whether the target was named or read
from a server. Version logic stays in ``govern.server``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from govern.errors import UsageError

if TYPE_CHECKING:
    from govern.server import ServerInfo

_TARGET = re.compile(r"^(mariadb|mysql|percona)-(\d+)\.(\d+)(?:\.(\d+))?$")
#: A named series without a patch level means its latest release.
LATEST_PATCH = 99
MIB = 1024 * 1024


def default_max_allowed_packet(family: str, version: tuple[int, int, int]) -> int:
    """The server's compiled-in default (facts.md §5)."""
    if family == "mariadb":
        return 16 * MIB if version >= (10, 2, 4) else 4 * MIB
    return 64 * MIB if version >= (8, 0, 0) else 4 * MIB


def parse_target(name: str, where: str = "--target") -> ServerInfo:
    """``mysql-8.0`` → the capabilities of MySQL 8.0's latest release."""
    from govern.server import build_info  # pymysql: not for a digest without --target

    match = _TARGET.match(name.strip().lower())
    if not match:
        raise UsageError(
            f"{where}: unknown target {name!r} (use mariadb-10.11, mysql-8.0, mysql-5.7, "
            "mysql-8.0.18, percona-8.0 …)"
        )
    family, major, minor, patch = match.groups()
    version = (int(major), int(minor), int(patch) if patch else LATEST_PATCH)
    text = ".".join(map(str, version))
    variables = {
        "version": f"{text}-MariaDB" if family == "mariadb" else text,
        "version_comment": "Percona Server" if family == "percona" else family,
        "max_allowed_packet": str(default_max_allowed_packet(family, version)),
    }
    return build_info(variables)


def target_from_server(settings: object) -> tuple[ServerInfo, str]:
    """Detect the target on a live server (read-only: SHOW VARIABLES and friends)."""
    from govern.connection import ConnectionSettings, connect
    from govern.server import detect

    assert isinstance(settings, ConnectionSettings)
    conn = connect(settings, command="lint")
    try:
        info = detect(conn, replica_status=False)
    finally:
        conn.close()
    return info, f"{info.target} ({info.label}, live)"
