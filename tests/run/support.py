"""Helpers for the ``govern run`` tests: real wrapper processes, a scriptable job, polling.

The job (:data:`JOB`) is a small Python program steered through files in a folder:
it writes ``started`` (its pid), records the first signal it gets in ``signal``,
and exits with the number written to ``finish`` once that file appears.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness import MariaDB

GOVERN = [sys.executable, "-m", "govern"]

JOB = """
import os, signal, sys, time, pathlib
folder = pathlib.Path(sys.argv[1])
def publish(name, text):  # write then rename: a reader never sees an empty file
    (folder / (name + ".tmp")).write_text(text)
    os.replace(folder / (name + ".tmp"), folder / name)
def record(signum, frame):
    publish("signal", str(signum))
    sys.exit(128 + signum)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(sig, record)
if "ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
publish("started", str(os.getpid()))
while not (folder / "finish").exists():
    time.sleep(0.02)
time.sleep(0.05)
sys.exit(int((folder / "finish").read_text() or 0))
"""


def job(folder: Path, *extra: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-c", JOB, str(folder), *extra]


def govern(
    server: MariaDB, state: Path, command: str, *args: str, user: str = "govern_admin"
) -> list[str]:
    return [
        *GOVERN,
        command,
        "--defaults-file",
        str(server.defaults_file(user)),
        "--state",
        str(state),
        *args,
    ]


def run_args(
    server: MariaDB, state: Path, *options: str, job: list[str], user: str = "govern_admin"
) -> list[str]:
    return [*govern(server, state, "run", *options, user=user), "--", *job]


#: Wrappers started by the current test, ended by :func:`reap` even when it fails.
_STARTED: list[subprocess.Popen[str]] = []


def start(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """A wrapper process with its own process group, like one started from a shell."""
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    _STARTED.append(proc)
    return proc


def reap() -> None:
    """End what a test left running: jobs first (their wrappers then restore and exit), then
    any wrapper still there (its watchdog restores). A failed test must not leave a run holding
    the server's slow log for the tests after it."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            for child in _jobs(proc.pid):
                kill_group(child)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                kill_wrapper(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _jobs(wrapper: int) -> list[int]:
    """The wrapper's job: its child in its session (the watchdog has a session of its own)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == wrapper and int(fields[3]) == wrapper:  # ppid, session
                found.append(int(entry))
    return found


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> float:
    """Poll until ``predicate()`` is truthy; returns the seconds it took."""
    started = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def wait_started(folder: Path, proc: subprocess.Popen[str], timeout: float = 20) -> int:
    """Wait until the job runs (the setting is changed by then); returns the job's pid."""

    def started() -> bool:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"govern exited {proc.returncode} early:\n{out}\n{err}")
        return (folder / "started").exists()

    wait_for(started, timeout, "the job to start")
    return int((folder / "started").read_text())


def kill_wrapper(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the wrapper. Its orphaned job keeps the output pipes: do not read them."""
    proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def launch(
    server: MariaDB, state: Path, folder: Path, *options: str, user: str = "govern_admin"
) -> tuple[subprocess.Popen[str], int]:
    """Start ``govern run OPTIONS -- <the job>`` and wait until the job runs: (wrapper, job pid)."""
    proc = start(run_args(server, state, *options, job=job(folder), user=user))
    return proc, wait_started(folder, proc)


def history(state: Path) -> list[dict[str, Any]]:
    """``govern history --json``'s runs, newest first."""
    result = subprocess.run(
        [*GOVERN, "history", "--state", str(state), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    document = json.loads(result.stdout)
    assert document["schema"] == "govern.run.history"
    runs: list[dict[str, Any]] = document["runs"]
    return runs


def finish(folder: Path, code: int = 0) -> None:
    (folder / "finish.tmp").write_text(str(code))
    os.replace(folder / "finish.tmp", folder / "finish")


def value(conn: Any, name: str) -> str:
    with conn.cursor() as cur:
        cur.execute(f"SELECT @@GLOBAL.{name}")
        return str(cur.fetchone()[0])


def set_global(conn: Any, name: str, setting: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SET GLOBAL {name} = {setting}")


def binlog_position(conn: Any) -> tuple[Any, ...]:
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        return tuple(cur.fetchone())


_HOUSEKEEPING = ("Format_desc", "Gtid_list", "Binlog_checkpoint", "Rotate", "Stop")


def binlog_events_since(conn: Any, position: tuple[Any, ...]) -> list[tuple[str, str]]:
    """Events written after ``position`` in any binlog file (file housekeeping aside)."""
    first_file, first_pos = position[0], int(position[1])
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        files = [row[0] for row in cur.fetchall() if row[0] >= first_file]
        events = []
        for name in files:
            start = f" FROM {first_pos}" if name == first_file else ""
            cur.execute(f"SHOW BINLOG EVENTS IN '{name}'{start}")
            events += [
                (str(row[2]), str(row[5])) for row in cur.fetchall() if row[2] not in _HOUSEKEEPING
            ]
    return events


def kill_group(pid: int) -> None:
    """End a leftover job (an orphan of a killed wrapper) and its process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True
