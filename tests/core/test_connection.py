"""Connection settings precedence, DSNs, secrets, and real connections."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from govern.connection import (
    connect,
    parse_dsn,
    query_one,
    resolve_settings,
    write_defaults_file,
)
from govern.errors import ConfigError, ServerError, UsageError
from tests.harness import MariaDB


def cnf(path: Path, **options: str) -> str:
    body = "".join(f"{k}={v}\n" for k, v in options.items())
    path.write_text(f"[client]\n{body}")
    return str(path)


def test_explicit_options_beat_dsn_beat_defaults_file(tmp_path: Path) -> None:
    defaults = cnf(tmp_path / "a.cnf", host="filehost", user="fileuser", port="1111", password="pw")
    s = resolve_settings(
        host="clihost",
        dsn="mysql://dsnuser@dsnhost:2222/dsndb",
        defaults_file=defaults,
        environ={},
    )
    assert (s.host, s.user, s.port, s.database, s.password) == (
        "clihost",
        "dsnuser",
        2222,
        "dsndb",
        "pw",
    )
    assert s.source["host"] == "option"
    assert s.source["user"] == "--dsn"
    assert s.source["password"].startswith("--defaults-file")


def test_defaults_file_beats_govern_dsn_beats_home_cnf_beats_mysql_env(tmp_path: Path) -> None:
    home_cnf = cnf(
        Path(os.environ["HOME"]) / ".my.cnf", user="homeuser", port="3333", database="homedb"
    )
    try:
        env = {
            "GOVERN_DSN": "mysql://envuser:envpw@envhost:4444",
            "MYSQL_PWD": "mysqlpwd",
            "MYSQL_HOST": "mysqlhost",
        }
        s = resolve_settings(environ=env)
        assert (s.user, s.host, s.port, s.password, s.database) == (
            "envuser",
            "envhost",
            4444,
            "envpw",
            "homedb",
        )
        assert s.source["database"] == home_cnf
        # --defaults-file replaces ~/.my.cnf and outranks GOVERN_DSN.
        only = cnf(tmp_path / "only.cnf", user="onlyuser")
        s = resolve_settings(defaults_file=only, environ=env)
        assert (s.user, s.database, s.password) == ("onlyuser", None, "envpw")
        # With nothing else, the mysql environment variables apply.
        s = resolve_settings(
            defaults_file=cnf(tmp_path / "empty.cnf"), environ={"MYSQL_PWD": "x", "MYSQL_HOST": "h"}
        )
        assert (s.password, s.host) == ("x", "h")
    finally:
        os.unlink(home_cnf)


def test_password_never_from_argv() -> None:
    with pytest.raises(UsageError, match="visible in the process list"):
        resolve_settings(dsn="mysql://u:secret@h/db", environ={})


def test_password_hidden_from_repr_and_describe(tmp_path: Path) -> None:
    s = resolve_settings(
        defaults_file=cnf(tmp_path / "p.cnf", user="u", password="hunter2"), environ={}
    )
    assert "hunter2" not in repr(s)
    assert "hunter2" not in s.describe()


def test_ask_pass_overrides_every_source(tmp_path: Path) -> None:
    s = resolve_settings(
        defaults_file=cnf(tmp_path / "p.cnf", password="file"),
        ask_pass=True,
        environ={"MYSQL_PWD": "env"},
        prompt=lambda _: "typed",
    )
    assert s.password == "typed"
    assert s.source["password"] == "prompt"


def test_dsn_forms() -> None:
    assert parse_dsn(
        "mysql://u@h:3307/db?unix_socket=/s.sock", where="x", allow_password=False
    ) == {"user": "u", "host": "h", "port": 3307, "database": "db", "socket": "/s.sock"}
    for bad, message in [
        ("postgres://h", "must start with"),
        ("mysql://h/?bogus=1", "unknown DSN"),
        ("mysql://h:notaport", "not a valid DSN"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_dsn(bad, where="--dsn", allow_password=False)


def test_socket_versus_host(tmp_path: Path) -> None:
    file_socket = cnf(tmp_path / "s.cnf", socket="/tmp/file.sock")
    s = resolve_settings(host="db1", defaults_file=file_socket, environ={})
    assert not s.uses_socket and s.describe().endswith("@db1:3306")
    s = resolve_settings(
        socket="/tmp/cli.sock", defaults_file=cnf(tmp_path / "h.cnf", host="db1"), environ={}
    )
    assert s.uses_socket and s.describe().endswith("via /tmp/cli.sock")


def test_bad_port_and_missing_defaults_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="port must be a number"):
        resolve_settings(defaults_file=cnf(tmp_path / "p.cnf", port="abc"), environ={})
    with pytest.raises(ConfigError, match="no such file"):
        resolve_settings(defaults_file=str(tmp_path / "missing.cnf"), environ={})


def test_write_defaults_file_is_private_and_round_trips(tmp_path: Path) -> None:
    s = resolve_settings(host="h", port=3310, user="u", environ={"MYSQL_PWD": 'p"w\\d'})
    path = write_defaults_file(s, tmp_path / "child.cnf")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = resolve_settings(defaults_file=str(path), environ={})
    assert (again.host, again.port, again.user, again.password) == ("h", 3310, "u", 'p"w\\d')


@pytest.mark.server
def test_connects_through_option_file_dsn_and_socket(server: MariaDB) -> None:
    by_file = resolve_settings(defaults_file=str(server.defaults_file("govern_app")), environ={})
    conn = connect(by_file)
    assert query_one(conn, "SELECT CURRENT_USER()") == ("govern_app@127.0.0.1",)
    conn.close()
    by_dsn = resolve_settings(
        dsn=f"mysql://govern_app@127.0.0.1:{server.port}/app",
        environ={"MYSQL_PWD": server.passwords["govern_app"]},
    )
    conn = connect(by_dsn)
    assert query_one(conn, "SELECT DATABASE()") == ("app",)
    conn.close()
    by_socket = resolve_settings(
        dsn=f"mysql://govern_app@localhost/?unix_socket={server.socket}",
        environ={"MYSQL_PWD": server.passwords["govern_app"]},
    )
    assert by_socket.uses_socket
    conn = connect(by_socket)
    assert query_one(conn, "SELECT CURRENT_USER()") == ("govern_app@localhost",)
    conn.close()


@pytest.mark.server
def test_wrong_password_and_unreachable_are_server_errors(server: MariaDB, tmp_path: Path) -> None:
    bad = resolve_settings(
        defaults_file=cnf(
            tmp_path / "bad.cnf",
            host="127.0.0.1",
            port=str(server.port),
            user="govern_app",
            password="wrong",
        ),
        environ={},
    )
    with pytest.raises(ServerError, match=r"Access denied.*\(1045\)") as info:
        connect(bad)
    assert "wrong" not in info.value.message
    closed = resolve_settings(host="127.0.0.1", port=1, user="x", environ={})
    with pytest.raises(ServerError, match=r"cannot connect to x@127\.0\.0\.1:1"):
        connect(closed)
