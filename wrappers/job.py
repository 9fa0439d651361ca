"""Running the job: its own process group, signals passed on, a deadline, a grace period.

The job runs in a process group of its own so that ``--max-runtime`` and forwarded
signals reach everything it started (``sh -c``, pipelines, the clients they run).
On a terminal, govern hands the job the foreground (it can read the terminal, Ctrl-C
reaches it directly) and mirrors Ctrl-Z, the way a shell does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class SignalRelay:
    """INT, TERM, HUP and QUIT for the wrapper's whole life.

    Before the job starts they are remembered (the run is abandoned, the change undone);
    while it runs they go to its process group; afterwards they are remembered and the
    restore goes on: a second Ctrl-C must not leave the slow log off.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.received_at: float | None = None
        self.target: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for sig in FORWARDED:
            self._previous[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received, self.received_at = signum, time.monotonic()
        if self.target is not None:
            _signal_group(self.target, signum)


def find_program(name: str) -> str | None:
    """Where ``name`` would be executed from (``shutil.which``, without shutil's imports:
    ``govern run`` has to start fast)."""
    candidates = [name] if os.sep in name else [os.path.join(d, name) for d in os.get_exec_path()]
    for path in candidates:
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


def shell_argv(argv: list[str], path: str) -> list[str] | None:
    """``argv`` as a shell would start it, when the kernel cannot: a text file without ``#!``
    runs through ``/bin/sh`` (execve's ENOEXEC, what bash and dash do). None: a binary of no
    format the kernel knows (bash: "cannot execute binary file"). ``argv`` itself otherwise."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(80)
    except OSError:
        return argv  # not readable: exec says why
    if head.startswith((b"#!", b"\x7fELF")):
        return argv
    if b"\x00" in head.split(b"\n", 1)[0]:
        return None
    return ["/bin/sh", *argv]


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
        if signum != signal.SIGKILL:
            os.killpg(pgid, signal.SIGCONT)  # a stopped job would not see the signal


@dataclasses.dataclass(frozen=True)
class JobResult:
    exit_code: int
    #: ``max_runtime`` or the name of a forwarded signal when govern ended it, else None.
    ended_by: str | None = None
    killed: bool = False


def _set_foreground(fd: int, pgid: int) -> None:
    """tcsetpgrp from a process that may be in the background (SIGTTOU blocked meanwhile)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        os.tcsetpgrp(fd, pgid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _owned_terminal() -> int | None:
    """stdin's terminal when govern is its foreground process group, else None."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _child_takes_terminal() -> None:  # runs in the child between fork and exec
    os.setpgid(0, 0)
    _set_foreground(0, os.getpgrp())


def run_job(
    argv: list[str],
    env: Mapping[str, str],
    relay: SignalRelay,
    *,
    max_runtime: float | None,
    grace: float,
    on_start: Callable[[], None] | None = None,
) -> JobResult:
    """Run ``argv`` to its end and return its exit code (128+N when signal N ended it).

    Raises OSError when it cannot be started. Call with no other thread running (the
    terminal hand-over runs code between fork and exec); start threads in ``on_start``.
    """
    terminal = _owned_terminal()
    if terminal is None:
        proc = subprocess.Popen(argv, env=dict(env), process_group=0)
    else:
        proc = subprocess.Popen(argv, env=dict(env), preexec_fn=_child_takes_terminal)
        with contextlib.suppress(OSError):
            _set_foreground(terminal, proc.pid)
    pgid = proc.pid
    relay.target = pgid
    if relay.received is not None:  # arrived between the last check and the fork
        _signal_group(pgid, relay.received)

    status: list[int] = []
    finished = threading.Event()

    def wait() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
        while True:
            _, raw = os.waitpid(proc.pid, os.WUNTRACED)
            if os.WIFSTOPPED(raw):
                # Ctrl-Z on govern's terminal: stop together, go on together (fg). Any other
                # stop (kill -STOP, a background read) is left for whoever sent it.
                if terminal is not None and os.WSTOPSIG(raw) == signal.SIGTSTP:
                    os.tcsetpgrp(terminal, os.getpgrp())
                    os.kill(os.getpid(), signal.SIGSTOP)
                    os.tcsetpgrp(terminal, pgid)
                    _signal_group(pgid, signal.SIGCONT)
                continue
            status.append(raw)
            finished.set()
            return

    waiter = threading.Thread(target=wait, name="govern-job-wait", daemon=True)
    waiter.start()
    if on_start is not None:
        on_start()
    started = time.monotonic()
    ended_by: str | None = None
    term_at: float | None = None
    killed = False
    # A 0.25 s tick: a signal handler cannot safely wake a blocked wait, and a deadline
    # or a grace period checked four times a second is precise enough.
    while not finished.wait(0.25):
        now = time.monotonic()
        if term_at is None and relay.received is not None and relay.received_at is not None:
            term_at = relay.received_at
            ended_by = signal.Signals(relay.received).name
        if term_at is None and max_runtime is not None and now - started >= max_runtime:
            ended_by, term_at = "max_runtime", now
            _signal_group(pgid, signal.SIGTERM)
        if term_at is not None and not killed and now - term_at >= grace:
            _signal_group(pgid, signal.SIGKILL)
            killed = True
    waiter.join()
    relay.target = None
    proc.returncode = os.waitstatus_to_exitcode(status[0])
    if terminal is not None:
        with contextlib.suppress(OSError):
            _set_foreground(terminal, os.getpgrp())
    code = proc.returncode
    return JobResult(128 - code if code < 0 else code, ended_by, killed)
