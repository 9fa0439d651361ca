"""Session mode: the job's own sessions opt out of the slow log; nothing global changes.

Other clients stay logged, no privilege is needed (MariaDB lets any account turn its
own session's slow log off; MySQL honours a session ``long_query_time``), and there
is nothing to restore if anything dies. Two ways in:

* Python jobs: :func:`exempt` (a context manager) or :func:`exempted` (a decorator)
  around their DB-API connection; pools: ``init_command=os.environ["GOVERN_INIT_COMMAND"]``.
* ``mysql``/``mariadb`` client jobs: ``govern run`` writes an option file with an
  ``init-command`` in the ``[mysql]`` group and points ``MYSQL_HOME`` (or
  ``MARIADB_HOME``) at it. MariaDB's 10.11 client reads ``$MYSQL_HOME/my.cnf``
  (measured, tests/run/test_run_session.py); MySQL documents that file as read by the
  server only, so its client needs ``--defaults-extra-file=$GOVERN_DEFAULTS_FILE``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from govern.connection import LONG_QUERY_TIME_MAX
from govern.readonly import read_only_assignment
from govern.server import ServerInfo, build_info
from govern.wrappers.job import find_program

CLIENTS = ("mysql", "mariadb")

F = TypeVar("F", bound=Callable[..., Any])


def exemption(info: ServerInfo) -> dict[str, str]:
    """Session variable → value that keeps a session out of the slow log; empty if none can."""
    if info.session_slow_log_switch:
        return {info.slow_log_variable: "OFF"}
    if info.session_long_query_time:
        return {"long_query_time": str(LONG_QUERY_TIME_MAX)}
    return {}


def init_command(info: ServerInfo, read_only: bool = False) -> str | None:
    """One statement for a client's init command, e.g. ``SET SESSION log_slow_query = OFF``.

    ``read_only``: the scheduler handed the job a replica (``$GOVERN_SESSION_READ_ONLY``):
    the statement keeps its sessions read-only too, as the option file it got does."""
    settings = exemption(info)
    if not settings:
        return None
    parts = [f"SESSION {name} = {value}" for name, value in settings.items()]
    if read_only:
        parts.append(read_only_assignment(info.is_mariadb))
    return "SET " + ", ".join(parts)


def _query(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        return list(cursor.fetchall()) if cursor.description else []
    finally:
        cursor.close()


@contextlib.contextmanager
def exempt(conn: Any) -> Iterator[Any]:
    """Statements on ``conn`` inside the block stay out of the slow log.

    Works with any DB-API connection (PyMySQL, mysqlclient, mysql-connector). The
    session's own values come back when the block ends, so a pooled connection returns
    to the pool as it was. Nothing global changes::

        with exempt(conn):
            cursor.executemany("INSERT INTO t VALUES (%s, %s)", rows)
    """
    names = (
        "version",
        "version_comment",
        "log_slow_query",
        "slow_query_log",
        "long_query_time",
        "slow_query_log_use_global_control",
    )
    rows = _query(
        conn,
        "SHOW SESSION VARIABLES WHERE Variable_name IN ("
        + ", ".join(f"'{name}'" for name in names)
        + ")",
    )
    current = {str(name).lower(): str(value) for name, value in rows}
    info = build_info(current)
    settings = exemption(info)
    if not settings:
        import logging

        logging.getLogger("govern").warning(
            "govern: %s: this session cannot opt out of the slow log",
            info.slow_log_global_control_warning or info.label,
        )
    before = {name: current.get(name, "") for name in settings}
    if settings:
        _query(conn, "SET " + ", ".join(f"SESSION {n} = {v}" for n, v in settings.items()))
    try:
        yield conn
    finally:
        if settings:
            _query(
                conn, "SET " + ", ".join(f"SESSION {n} = {_literal(v)}" for n, v in before.items())
            )


def _literal(value: str) -> str:
    """Session values as read back (``ON``, ``1.000000``) are valid SET literals."""
    return value if value.replace(".", "", 1).isdigit() or value.isalpha() else f"'{value}'"


def exempted(func: F) -> F:
    """Decorator: run ``func(conn, …)`` inside :func:`exempt` on its first argument."""

    @functools.wraps(func)
    def wrapper(conn: Any, *args: Any, **kwargs: Any) -> Any:
        with exempt(conn):
            return func(conn, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def client_problem(argv: list[str]) -> str | None:
    """Why the job's client would not read govern's init command, or None when it will."""
    program = os.path.basename(argv[0])
    if program not in CLIENTS:
        return f"{program} is not a mysql/mariadb client"
    found = find_program(argv[0])
    if found is None or "mariadb" not in os.path.basename(os.path.realpath(found)):
        return f"{argv[0]} is not MariaDB's client (only MariaDB's reads $MYSQL_HOME/my.cnf)"
    for arg in argv[1:]:
        if arg == "--no-defaults" or arg.startswith("--defaults-file"):
            return f"{arg} makes it skip the option file govern hands it"
        if arg.startswith("--init-command"):
            return "it sets its own --init-command"
    return None


def opting_out_job(argv: list[str]) -> str | None:
    """Why the job opts its own sessions out by itself, or None: ``govern load`` reads
    ``$GOVERN_INIT_COMMAND`` (its rows then stay out of the slow log too)."""
    words = list(argv)
    if len(words) > 2 and words[1:3] == ["-m", "govern"]:
        words = ["govern", *words[3:]]
    if len(words) > 1 and os.path.basename(words[0]) == "govern" and words[1] == "load":
        return "govern load opts its sessions out ($GOVERN_INIT_COMMAND)"
    return None


def client_environment(statement: str, folder: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """Environment for a session-mode job: option file, ``MYSQL_HOME`` and the statement."""
    home_variable = "MARIADB_HOME" if environ.get("MARIADB_HOME") else "MYSQL_HOME"
    previous = environ.get(home_variable)
    lines = ["# govern run: the job's mysql/mariadb clients opt out of the slow log"]
    if previous and (Path(previous) / "my.cnf").is_file():
        lines.append(f"!include {Path(previous) / 'my.cnf'}")
    lines += ["[mysql]", f'init-command="{statement}"']
    path = folder / "my.cnf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return {
        home_variable: str(folder),
        "GOVERN_DEFAULTS_FILE": str(path),
        "GOVERN_INIT_COMMAND": statement,
    }
