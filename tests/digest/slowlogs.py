"""Record real slow logs from the test MariaDB, and digest them with pt-query-digest.

A test runs a workload with ``long_query_time = 0`` into a log file of its own (in
the server's log directory, which the server may write), then puts the server's
log file back. pt-query-digest (installed by scripts/test) makes the saved digest
the reports read until ``govern digest`` writes its own.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def wait_until_logged(admin: Any, timeout: float = 60.0) -> None:
    """Return once every statement other connections ran is in the slow log.

    MariaDB sends a statement's result before it writes the statement's slow-log entry
    (with explain verbosity it runs the EXPLAIN first), and shows the connection as
    ``Sleep`` only after that write; a connection the client closed stays listed until
    then. A fixed sleep is not enough on a loaded machine: the last entries were lost
    when the log was switched off before they were written.
    """
    deadline = time.monotonic() + timeout
    while True:
        with admin.cursor() as cur:
            cur.execute(
                "SELECT ID, COMMAND, STATE, LEFT(INFO, 80) FROM information_schema.PROCESSLIST"
                " WHERE ID <> CONNECTION_ID() AND COMMAND IN ('Query', 'Execute')"
            )
            busy = cur.fetchall()
        if not busy:
            return
        assert time.monotonic() < deadline, f"statements still running: {busy}"
        time.sleep(0.02)


@contextlib.contextmanager
def recording(server: Any, name: str) -> Iterator[Path]:
    """Everything run inside the block (by new connections) lands in the returned log."""
    log = server.logdir / f"{name}.log"
    log.unlink(missing_ok=True)  # a rerun in the same server must not append to the last one
    admin = server.connect()
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.slow_query_log_file")
        previous = cur.fetchone()[0]
        cur.execute("SET GLOBAL slow_query_log_file = %s", (str(log),))
        cur.execute("SET GLOBAL long_query_time = 0")
        cur.execute("SET GLOBAL slow_query_log = ON")
    # MariaDB writes "# Time:" only when the second differs from the last event it
    # logged, in any file: a recording that starts in the second the previous one
    # ended would have no time until the next second (and, if a banner then swallows
    # that line, none at all: no timeline). Start on a fresh second.
    time.sleep(1.02 - time.time() % 1)
    try:
        yield log
        wait_until_logged(admin)
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL slow_query_log = OFF")
            cur.execute("SET GLOBAL slow_query_log_file = %s", (previous,))
        admin.close()


def record(
    server: Any, connect: Callable[..., Any], name: str, workload: Callable[[Any], None]
) -> Path:
    with recording(server, name) as log:
        conn = connect("govern_app", tcp=True, database="app")
        workload(conn)
        conn.commit()
        conn.close()
    return log


def pt_digest(log: Path, output: Path) -> Path:
    """``pt-query-digest --output json --limit 100%`` of ``log`` into ``output``."""
    if shutil.which("pt-query-digest") is None:
        pytest.skip("pt-query-digest is not installed (scripts/test installs percona-toolkit)")
    with output.open("w") as handle:
        subprocess.run(
            [
                "pt-query-digest",
                "--no-version-check",
                "--output",
                "json",
                "--limit",
                "100%",
                str(log),
            ],
            stdout=handle,
            check=True,
        )
    return output


def events(log: Path) -> list[tuple[float, float]]:
    """(``SET timestamp``, Query_time) of every event in a MariaDB slow log, in file order.

    Just enough parsing for the load chart's test input; the digest engine is the real parser.
    """
    found: list[tuple[float, float]] = []
    query_time: float | None = None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("# Query_time:"):
            query_time = float(line.split()[2])
        elif line.startswith("SET timestamp=") and query_time is not None:
            found.append((float(line[len("SET timestamp=") :].rstrip(";")), query_time))
            query_time = None
    return found
