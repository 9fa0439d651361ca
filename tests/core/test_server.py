"""Server detection: flavor, version, capabilities — from snapshots and from the real server."""

from __future__ import annotations

import pytest

from govern.connection import connect
from govern.server import Flavor, build_info, detect, parse_version
from tests.harness import MariaDB


def snapshot(version: str, comment: str = "", **variables: str) -> dict[str, str]:
    return {"version": version, "version_comment": comment, **variables}


def test_parse_version() -> None:
    assert parse_version("10.11.19-MariaDB-0+deb12u1-log") == (10, 11, 19)
    assert parse_version("8.0.36-28") == (8, 0, 36)
    assert parse_version("garbage") == (0, 0, 0)


@pytest.mark.parametrize(
    ("version", "comment", "flavor", "row_alias", "values_deprecated", "value_fn", "qc"),
    [
        ("10.11.19-MariaDB", "Debian 12", Flavor.MARIADB, False, False, True, True),
        ("10.2.44-MariaDB", "", Flavor.MARIADB, False, False, False, True),
        ("5.7.44-log", "MySQL Community Server (GPL)", Flavor.MYSQL, False, False, False, True),
        ("8.0.2", "MySQL Community Server (GPL)", Flavor.MYSQL, False, False, False, True),
        ("8.0.19", "MySQL Community Server (GPL)", Flavor.MYSQL, True, False, False, False),
        ("8.0.36", "MySQL Community Server (GPL)", Flavor.MYSQL, True, True, False, False),
        ("8.0.36-28", "Percona Server (GPL), Release 28", Flavor.PERCONA, True, True, False, False),
    ],
)
def test_capabilities_by_version(
    version: str,
    comment: str,
    flavor: Flavor,
    row_alias: bool,
    values_deprecated: bool,
    value_fn: bool,
    qc: bool,
) -> None:
    info = build_info(snapshot(version, comment))
    assert info.flavor is flavor
    assert info.row_alias is row_alias
    assert info.values_function_deprecated is values_deprecated
    assert info.value_function is value_fn
    assert info.has_query_cache is qc
    assert info.session_slow_log_switch is (flavor is Flavor.MARIADB)


def test_slow_log_variable_names() -> None:
    assert (
        build_info(snapshot("10.11.5-MariaDB", log_slow_query="ON")).slow_log_variable
        == "log_slow_query"
    )
    assert (
        build_info(snapshot("10.6.5-MariaDB", slow_query_log="ON")).slow_log_variable
        == "slow_query_log"
    )
    assert build_info(snapshot("8.0.36", slow_query_log="OFF")).slow_log_enabled is False


def test_percona_global_control_disables_session_threshold() -> None:
    info = build_info(
        snapshot("5.7.40-43", "Percona Server", slow_query_log_use_global_control="long_query_time")
    )
    assert info.session_long_query_time is False
    assert "session mode cannot exempt" in (info.slow_log_global_control_warning or "")
    assert (
        build_info(snapshot("5.7.40-43", "Percona Server")).slow_log_global_control_warning is None
    )


def test_query_cache_absent_when_have_query_cache_no() -> None:
    assert build_info(snapshot("10.11.5-MariaDB", have_query_cache="NO")).has_query_cache is False


def test_privilege_names_by_flavor() -> None:
    assert build_info(snapshot("8.0.36")).set_global_privileges == (
        "SYSTEM_VARIABLES_ADMIN",
        "SUPER",
    )
    assert build_info(snapshot("10.11.5-MariaDB")).set_global_privileges == ("SUPER",)
    assert build_info(snapshot("8.0.36")).replica_status_statement == "SHOW REPLICA STATUS"


@pytest.mark.server
def test_detects_the_harness_server(server: MariaDB, admin_settings) -> None:  # type: ignore[no-untyped-def]
    conn = connect(admin_settings)
    info = detect(conn)
    conn.close()
    assert info.flavor is Flavor.MARIADB
    assert info.version >= (10, 11, 0)
    assert info.slow_log_variable == "log_slow_query"
    assert info.slow_log_file == str(server.slow_log)
    assert info.has_query_cache and info.value_function and not info.row_alias
    assert info.binlog_enabled
    assert info.is_replica is False
    assert info.event_scheduler in ("ON", "OFF")
