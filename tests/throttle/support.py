"""Shared by the throttle tests: a replica made to lag for real, pt-heartbeat, the CLI."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tests.harness import MariaDB

GOVERN = [sys.executable, "-m", "govern"]
PT_HEARTBEAT = shutil.which("pt-heartbeat")


def wait_for(condition: Callable[[], bool], timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not met in {timeout:g}s")


def scalar(conn: Any, sql: str, args: Any = None) -> Any:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        row = cur.fetchone()
        return row[0] if row else None


def caught_up(primary: MariaDB, replica: MariaDB, timeout: float = 180) -> None:
    """Wait until the replica has applied everything the primary binlogged so far."""
    p, r = primary.connect(), replica.connect()
    try:
        target = scalar(p, "SELECT @@gtid_binlog_pos")
        wait_for(
            lambda: scalar(r, "SELECT MASTER_GTID_WAIT(%s, 1)", (target,)) == 0,
            timeout,
            "the replica catching up",
        )
    finally:
        p.close()  # type: ignore[attr-defined]
        r.close()  # type: ignore[attr-defined]


@contextlib.contextmanager
def sql_thread_stopped(replica: MariaDB) -> Iterator[Callable[[], None]]:
    """Replication applies nothing while inside (Seconds_Behind_Master reads NULL); the
    yielded function restarts it early; it restarts on the way out in any case."""
    conn: Any = replica.connect()
    with conn.cursor() as cur:
        cur.execute("STOP SLAVE SQL_THREAD")

    def restart() -> None:
        with conn.cursor() as cur:
            cur.execute("START SLAVE SQL_THREAD")

    try:
        yield restart
    finally:
        restart()
        conn.close()


@contextlib.contextmanager
def replication_delayed(replica: MariaDB, seconds: int) -> Iterator[None]:
    """MASTER_DELAY: the replica applies each event ``seconds`` after the primary did."""
    conn: Any = replica.connect()

    def delay(value: int) -> None:
        with conn.cursor() as cur:
            cur.execute("STOP SLAVE")
            cur.execute(f"CHANGE MASTER TO MASTER_DELAY = {int(value)}")
            cur.execute("START SLAVE")

    delay(seconds)
    try:
        yield
    finally:
        delay(0)
        conn.close()


@contextlib.contextmanager
def heartbeat(primary: MariaDB, replica: MariaDB, interval: float = 0.2) -> Iterator[str]:
    """pt-heartbeat --update on the primary (a real daemon) into a fresh table; yields
    ``percona.TABLE`` once the replica has it."""
    assert PT_HEARTBEAT is not None
    table = f"hb_{uuid.uuid4().hex[:8]}"
    conn: Any = primary.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS percona")
    conn.close()
    process = subprocess.Popen(
        [
            PT_HEARTBEAT,
            f"--defaults-file={primary.defaults_file('govern_admin')}",
            "-D",
            "percona",
            "--table",
            table,
            "--create-table",
            "--update",
            "--interval",
            str(interval),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        r: Any = replica.connect()
        wait_for(
            lambda: (
                scalar(
                    r,
                    "SELECT COUNT(*) FROM information_schema.TABLES"
                    " WHERE TABLE_SCHEMA = 'percona' AND TABLE_NAME = %s",
                    (table,),
                )
                == 1
            ),
            120,
            "the heartbeat table on the replica",
        )
        r.close()
        yield f"percona.{table}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def govern(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GOVERN, *args], capture_output=True, text=True, **kwargs)
