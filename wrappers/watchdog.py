"""The watchdog: a small process that restores when the wrapper dies (``kill -9`` included).

Forked (not exec'd: it starts in about a millisecond and already has the connection
settings in memory, so no secret crosses a process boundary) before the wrapper
starts any thread, then detached into its own session: terminal signals and a
``kill`` of the wrapper's process group miss it, and it outlives the wrapper.

It blocks on a pipe whose only writer is the wrapper. ``done`` means the wrapper
finished cleanly; end of file without it means the wrapper died, and the watchdog
repairs the run the way ``govern recover`` would, retrying with backoff while the
server is unreachable. ``handoff`` means the wrapper could not restore at the end
(server away) and leaves the retrying to the watchdog.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from govern.connection import ConnectionSettings
from govern.state import StateStore

DONE = b"done\n"
HANDOFF = b"handoff\n"
#: The watchdog gives up after this long without reaching the server; ``govern recover``
#: and the next ``govern run`` repair the entry later, the server-side event sooner.
GIVE_UP_S = 3600
LOG_NAME = "watchdog.log"


class Watchdog:
    """The wrapper's end of the pipe."""

    def __init__(self, pid: int, write_fd: int) -> None:
        self.pid = pid
        self._fd: int | None = write_fd

    def _say(self, message: bytes) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._fd, message)
        os.close(self._fd)
        self._fd = None

    def done(self) -> None:
        """The run finished cleanly: the watchdog exits."""
        self._say(DONE)

    def handoff(self) -> None:
        """The wrapper could not restore: the watchdog keeps trying."""
        self._say(HANDOFF)


def spawn(settings: ConnectionSettings, state_path: Path, run_id: str) -> Watchdog:
    """Fork the detached watchdog.

    Call before the process starts a thread, opens SQLite (its per-process lock
    bookkeeping is not fork-safe) or connects to the server.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_fd)
        os.setsid()  # its own session: no terminal, out of reach of the wrapper's group
        _watch(read_fd, settings, state_path, run_id)  # never returns
    os.close(read_fd)
    return Watchdog(pid, write_fd)


def _watch(read_fd: int, settings: ConnectionSettings, state_path: Path, run_id: str) -> None:
    """The watchdog's whole life. Ends with ``os._exit``: nothing inherited is finalised."""
    code = 0
    try:
        _detach(read_fd, state_path)
        # Open now, keep until the end: the journal is what the watchdog repairs from, and
        # while it is open the wrapper's close is not the last one, so SQLite's checkpoint
        # on close (two fsyncs) is not on the job's critical path. The watchdog leaves with
        # os._exit, without closing: the WAL stays for the next opener, as after any crash.
        store = StateStore.open(state_path)
        message = b""
        while True:
            chunk = os.read(read_fd, 64)
            if not chunk:
                break
            message += chunk
        if message != DONE:
            why = "handed over by the wrapper" if message == HANDOFF else "the wrapper died"
            code = 0 if _recover(settings, store, run_id, why) else 1
    except BaseException as exc:  # a watchdog must never traceback onto a terminal
        _log(f"watchdog for run {run_id} failed: {exc!r}")
        code = 1
    os._exit(code)


def _detach(keep_fd: int, state_path: Path) -> None:
    """Drop everything inherited: the terminal, the job's pipes, anything else open."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(
            sig, signal.SIG_IGN if sig in (signal.SIGHUP, signal.SIGPIPE) else signal.SIG_DFL
        )
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 65536)
    null = os.open(os.devnull, os.O_RDWR)
    try:
        state_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        log = os.open(state_path.parent / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        log = os.dup(null)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text("govern-watchdog")


def _log(message: str) -> None:
    with contextlib.suppress(Exception):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} [{os.getpid()}] {message}", file=sys.stderr, flush=True)


def _recover(settings: ConnectionSettings, store: StateStore, run_id: str, why: str) -> bool:
    """Repair the run, retrying with backoff for up to GIVE_UP_S while the server is away."""
    from govern.wrappers.recovery import repair_run

    deadline = time.monotonic() + GIVE_UP_S
    delay = 0.5
    while True:
        try:
            outcome = repair_run(settings, store, run_id, actor="watchdog", reason=why)
            _log(f"run {run_id}: {why}; {outcome}")
            return True
        except Exception as exc:
            if time.monotonic() + delay > deadline:
                _log(f"run {run_id}: {why}; giving up after {GIVE_UP_S} s: {exc}")
                return False
            _log(f"run {run_id}: {why}; server unreachable ({exc}), retrying in {delay:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 60)
