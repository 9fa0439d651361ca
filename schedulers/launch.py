"""How one attempt of a job is started: its command line, its environment, its process group.

A job never sees a password in argv: each server it may use is handed over as a
0600 option file whose path is in the environment (``GOVERN_WORKER_CNF``, and
``GOVERN_PRIMARY_CNF`` when the catalog names a primary), plus host/port/user
variables. Pass the file as ``--defaults-file`` (not ``--defaults-extra-file``:
``~/.my.cnf`` is read after an extra file and could point the job elsewhere).

On a replica or a read_only server every session a job opens through the worker's
option file is read-only, whatever the job is (``sql`` or ``command``): the file's
``init-command`` is ``SET SESSION TRANSACTION READ ONLY``, and so is
``$GOVERN_INIT_COMMAND`` for clients that read no init-command from a file (PyMySQL),
so a stray write fails there instead of diverging the replica, even for an account
that ``read_only`` lets through (READ_ONLY ADMIN). Writes go to ``$GOVERN_PRIMARY_CNF``,
the catalog's ``[primary]``. A ``sql`` job runs the file through the mysql client on
its worker. On MariaDB the job's timeout is also set as
``max_statement_time``: killing the client alone leaves the statement running on
the server until it ends.

``wrap = true`` runs the job under ``govern run --name JOB`` (slow-log governance),
whose exit code is the job's own. A wrapped ``sql`` job opts its own session out (the
statement govern's own connection to the worker used), so ``govern run`` takes session
mode and nothing global changes; ``opts_out = true`` says a command job does the same
with ``$GOVERN_INIT_COMMAND``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from govern.connection import DEFAULT_PORT, ConnectionSettings
from govern.readonly import READ_ONLY_ENV, READ_ONLY_SESSION
from govern.schedulers.catalog import JobSpec
from govern.throttle.handoff import Handoff


def govern_run_prefix() -> str:
    """How a job script starts this govern's `govern run` (``$GOVERN_RUN``).

    The scheduler's own govern, so a job needs no govern on its PATH (a virtualenv)."""
    script = Path(sys.executable).parent / "govern"
    return f"{script} run" if script.is_file() else f"{sys.executable} -m govern run"


def mysql_client() -> str | None:
    return shutil.which("mariadb") or shutil.which("mysql")


@dataclasses.dataclass(frozen=True)
class ServerHandle:
    """A server as a job receives it: settings (never printed) and a 0600 option file."""

    settings: ConnectionSettings
    defaults_file: Path
    read_only: bool = False  # a replica or read_only: SQL jobs get a read-only session
    statement_time_variable: str | None = None  # e.g. max_statement_time on MariaDB
    #: How a session opts out of the slow log there (wrapped sql jobs run it), if any.
    opt_out: str | None = None

    def environment(self, prefix: str) -> dict[str, str]:
        s = self.settings
        env = {f"{prefix}_CNF": str(self.defaults_file), f"{prefix}_USER": s.effective_user}
        if s.uses_socket:
            env[f"{prefix}_SOCKET"] = s.effective_socket or ""
        else:
            env[f"{prefix}_HOST"] = s.host or "localhost"
            env[f"{prefix}_PORT"] = str(s.port or DEFAULT_PORT)
        if s.database:
            env[f"{prefix}_DATABASE"] = s.database
        return env


@dataclasses.dataclass(frozen=True)
class Attempt:
    """Everything that identifies one try of one job, for its environment."""

    schedule: str
    night_id: int
    scheduled_for: str
    job: JobSpec
    number: int
    worker: str
    rows: int | None


def govern_run_argv(job: JobSpec, defaults_file: Path, opts_out: bool) -> list[str]:
    """``govern run --name JOB [--mode M] [--opts-out] --defaults-file CNF --``."""
    argv = [sys.executable, "-m", "govern", "run", "--name", job.name]
    if job.wrap_mode != "auto":
        argv += ["--mode", job.wrap_mode]
    if opts_out:
        argv.append("--opts-out")
    return [*argv, "--defaults-file", str(defaults_file), "--"]


def sql_argv(
    client: str, worker: ServerHandle, statement_limit: float | None, opt_out: bool = False
) -> list[str]:
    """The mysql client reading the job's SQL on stdin, with govern's session guards.

    ``statement_limit`` backs up the job's timeout on the server (timeout plus the
    kill grace: govern's own TERM comes first and the outcome says ``timeout``);
    ``opt_out`` keeps the session out of the slow log (a wrapped job)."""
    init = []
    if opt_out and worker.opt_out:
        init.append(worker.opt_out)
    if worker.read_only:
        init.append(READ_ONLY_SESSION)
    if statement_limit and worker.statement_time_variable:
        init.append(f"SET SESSION {worker.statement_time_variable} = {statement_limit:g}")
    argv = [client, f"--defaults-file={worker.defaults_file}", "--batch"]
    if init:
        argv.append(f"--init-command={'; '.join(init)}")
    return argv


def job_argv(
    job: JobSpec, worker: ServerHandle, client: str | None, kill_grace: float = 0.0
) -> list[str]:
    opts_out = job.opts_out
    if job.sql is not None:
        if client is None:
            raise FileNotFoundError("no mysql or mariadb client on PATH for sql jobs")
        limit = job.timeout + max(kill_grace, 1.0) if job.timeout else None
        opts_out = job.wrap and worker.opt_out is not None
        argv = sql_argv(client, worker, limit, opt_out=opts_out)
    else:
        argv = list(job.command or ())
    if job.wrap:
        argv = govern_run_argv(job, worker.defaults_file, opts_out) + argv
    return argv


def job_environment(
    base: Mapping[str, str],
    attempt: Attempt,
    worker: ServerHandle,
    primary: ServerHandle | None,
    throttle: Handoff | None = None,
) -> dict[str, str]:
    env = dict(base)
    env.update(
        GOVERN_SCHEDULE=attempt.schedule,
        GOVERN_NIGHT_ID=str(attempt.night_id),
        GOVERN_SCHEDULED_FOR=attempt.scheduled_for,
        GOVERN_JOB=attempt.job.name,
        GOVERN_JOB_KEY=attempt.job.key,
        GOVERN_ATTEMPT=str(attempt.number),
        GOVERN_WORKER=attempt.worker,
    )
    if attempt.rows is not None:
        env["GOVERN_JOB_ROWS"] = str(attempt.rows)
    if worker.read_only:  # the worker's option file runs it too; $GOVERN_INIT_COMMAND for
        env["GOVERN_INIT_COMMAND"] = READ_ONLY_SESSION  # clients that take no init-command
        env[READ_ONLY_ENV] = "1"  # from a file (PyMySQL), and `govern run` keeps it
    else:
        env.pop(READ_ONLY_ENV, None)
    env["GOVERN_RUN"] = govern_run_prefix()
    env.update(worker.environment("GOVERN_WORKER"))
    if primary is not None:
        env.update(primary.environment("GOVERN_PRIMARY"))
    if throttle is not None:
        env.update(throttle.environment())
    return env


class Process:
    """A job's process group: started in its own session, ended as a whole."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        cwd: Path,
        stdin: Path | None,
        log: IO[bytes],
        wake: threading.Event | None = None,
    ) -> None:
        """``wake`` is set the moment the job ends (the runner sleeps on it)."""
        _check_program(argv[0], cwd, env)
        # The parent-death signal reaches the group's leader even if the scheduler is
        # SIGKILLed; the keeper passes it on to the whole group (see GROUP_KEEPER).
        prefix = ["setpriv", "--pdeathsig", "TERM", "--"] if _SETPRIV else []
        prefix += ["sh", "-c", GROUP_KEEPER, "govern-job"]
        stdin_file = open(stdin, "rb") if stdin is not None else None  # noqa: SIM115
        try:
            #: When the job starts: taken at the fork, after govern's own bookkeeping.
            self.started_at = time.monotonic()
            self.popen = subprocess.Popen(
                prefix + argv,
                env=dict(env),
                cwd=cwd,
                stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if stdin_file is not None:
                stdin_file.close()
        self.term_sent_at: float | None = None
        #: When the leader exited, taken by a thread waiting on it (``waitid`` without
        #: reaping): the end is timed as it happens, whatever the runner is busy with.
        self.ended_at: float | None = None
        self._wake = wake
        threading.Thread(target=self._watch, name=f"job-{self.pid}", daemon=True).start()

    def _watch(self) -> None:
        with contextlib.suppress(ChildProcessError):  # already reaped by poll: it ended
            os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOWAIT)
        self.ended_at = time.monotonic()
        if self._wake is not None:
            self._wake.set()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        """The exit code (128+N for signal N) once it ended, else None."""
        code = self.popen.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def terminate(self) -> None:
        """TERM the whole group (once); :meth:`kill_if_overdue` follows up with KILL."""
        if self.term_sent_at is None:
            self.term_sent_at = time.monotonic()
            self._signal(signal.SIGTERM)

    def kill_if_overdue(self, grace: float) -> None:
        if self.term_sent_at is not None and time.monotonic() - self.term_sent_at >= grace:
            self._signal(signal.SIGKILL)

    def reap_group(self) -> None:
        """After the leader ended on a TERM: KILL whatever of its group is left."""
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)


_SETPRIV = shutil.which("setpriv") is not None

#: The group's leader, between setpriv and the job: a TERM (the parent-death signal, or
#: :meth:`Process.terminate`) goes on to the whole group. Without it the signal reached only
#: the leader: a shell line's ``sh`` died, the programs it had started ran on after a
#: SIGKILLed scheduler, and a standby that took the night over ran the job a second time.
#: The job runs in the background so that ``wait`` returns to the trap at once; it reads the
#: keeper's stdin (``3<&0``: a background job's stdin is otherwise /dev/null). After a TERM
#: the keeper ignores further ones and waits on: its exit status is always the job's (128+N
#: for a signal), a job that handles the TERM and exits 3 ends with 3.
GROUP_KEEPER = (
    """trap "trap '' TERM; kill -TERM 0" TERM; exec 3<&0; "$@" <&3 3<&- & job=$!; """
    'while kill -0 "$job" 2>/dev/null; do wait "$job"; done; wait "$job"'
)


def _check_program(program: str, cwd: Path, env: Mapping[str, str]) -> None:
    """Say "not found" ourselves: behind setpriv it would read as setpriv's own failure."""
    if "/" in program:
        found = (cwd / program).is_file() and os.access(cwd / program, os.X_OK)
    else:
        found = shutil.which(program, path=env.get("PATH")) is not None
    if not found:
        raise FileNotFoundError(f"{program}: command not found or not executable")
