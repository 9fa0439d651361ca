"""``govern run``: run a job with the slow log governed, and always put the setting back.

The library entry point is :func:`run`; ``govern run`` is a thin Click shell over it,
and the scheduler may call either. The steps, for a mode that changes a global:

1. fork the watchdog (:mod:`govern.wrappers.watchdog`); connect, detect the server, repair
   stale journal entries of this server;
2. choose the mode (:mod:`govern.wrappers.modes`) and journal the run;
3. join (:mod:`govern.wrappers.hold`): claim, arm the dead-man event, change the setting;
4. run the job (:mod:`govern.wrappers.job`) while the lease is kept (:mod:`govern.wrappers.lease`);
5. finish: the last run restores (compare-and-swap); list connections left blind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql

from govern.connection import ConnectionSettings, connect, error_text
from govern.errors import ServerError, UsageError
from govern.output import info as print_info
from govern.output import warn as print_warning
from govern.privileges import read_grants
from govern.readonly import READ_ONLY_ENV
from govern.redact import redact
from govern.server import ServerInfo, current_account, detect, with_replica_status
from govern.state import StateStore, default_state_path, utcnow
from govern.units import plural
from govern.wrappers import blind, deadman, journal, session
from govern.wrappers.hold import CONNECTION_ERRORS, Holding, Outcome
from govern.wrappers.job import JobResult, SignalRelay, find_program, run_job, shell_argv
from govern.wrappers.journal import RunRecord
from govern.wrappers.lease import LeaseKeeper
from govern.wrappers.modes import Choice, Mode, choose
from govern.wrappers.recovery import Repair, recover_server
from govern.wrappers.variables import LONG_QUERY_TIME, slow_log
from govern.wrappers.watchdog import Watchdog, spawn

if TYPE_CHECKING:
    from govern.throttle.spec import ThrottleSpec

DEFAULT_LEASE_S = 60.0
DEFAULT_GRACE_S = 10.0
DEFAULT_THRESHOLD_S = 10.0
#: Blind connections named one by one in the summary (all of them are in the history).
SHOWN_BLIND = 5


@dataclasses.dataclass
class RunOptions:
    name: str | None = None
    mode: Mode = Mode.AUTO
    threshold: float = DEFAULT_THRESHOLD_S
    max_runtime: float | None = None
    grace: float = DEFAULT_GRACE_S
    lease: float = DEFAULT_LEASE_S
    #: ``refuse`` (exit 3 without running the job) or ``run`` (run it ungoverned, warn).
    on_error: str = "refuse"
    state_path: Path | None = None
    quiet: bool = False
    #: The job opts its own sessions out ($GOVERN_INIT_COMMAND): auto picks session mode.
    opts_out: bool = False
    #: checks handed to the job in $GOVERN_THROTTLE (govern.throttle.handoff)
    throttle: ThrottleSpec | None = None


@dataclasses.dataclass
class RunResult:
    exit_code: int
    record: RunRecord
    outcome: Outcome | None = None
    repairs: list[Repair] = dataclasses.field(default_factory=list)


class _Report:
    """Lines for the user on stderr; warnings also go into the run's history."""

    def __init__(self, record: RunRecord, quiet: bool) -> None:
        self.record = record
        self.quiet = quiet

    def say(self, message: str) -> None:
        if not self.quiet:
            print_info(message)

    def warn(self, message: str) -> None:
        self.record.warnings.append(message)
        print_warning(message)


def check_program(argv: list[str]) -> list[str]:
    """How the job starts; fails before touching the server when it cannot (127/126, like a
    shell). A script without ``#!`` runs through /bin/sh, as shells run it."""
    if not argv:
        raise UsageError("nothing to run: govern run [OPTIONS] -- COMMAND [ARGS]...")
    program = argv[0]
    found = find_program(program)
    if found is None:
        if os.sep in program and os.path.exists(program):
            raise UsageError(f"{program}: permission denied", exit_code=126)
        raise UsageError(f"{program}: command not found", exit_code=127)
    started = shell_argv(argv, found)
    if started is None:
        raise UsageError(f"{program}: cannot execute binary file: Exec format error", exit_code=126)
    return started


def run(settings: ConnectionSettings, argv: list[str], options: RunOptions) -> RunResult:
    """Run ``argv`` with the slow log governed on the server ``settings`` reach.

    Returns the job's exit code in the result. Raises GovernError (exit 2, 3, 126, 127)
    when the job was not run.
    """
    started = check_program(argv)
    relay = SignalRelay()
    relay.install()
    run_id = os.urandom(6).hex()
    state_path = Path(options.state_path) if options.state_path else default_state_path()
    # Forked first, while this process has no SQLite handle and no server socket: SQLite's
    # per-process file bookkeeping does not survive a fork, and an inherited socket would
    # keep a killed wrapper's claim alive in the watchdog.
    watchdog = spawn(settings, state_path, run_id)
    try:
        with StateStore.open(state_path) as store:
            # WAL with synchronous=NORMAL: a commit survives the process being killed (what
            # the journal is for) without an fsync each; only an OS crash may lose the last.
            store.db.execute("PRAGMA synchronous = NORMAL")
            run = _Run(settings, argv, options, store, relay, run_id, watchdog, started)
            result = run.execute()
    except BaseException:
        watchdog.handoff()  # whatever went wrong, the watchdog checks the journal
        raise
    finally:
        relay.uninstall()
    watchdog.done()  # no-op when the run already told it
    return result


class _Run:
    def __init__(
        self,
        settings: ConnectionSettings,
        argv: list[str],
        options: RunOptions,
        store: StateStore,
        relay: SignalRelay,
        run_id: str,
        watchdog: Watchdog,
        started: list[str],
    ) -> None:
        self.settings = settings
        #: What is executed: ``argv``, or /bin/sh reading a script without ``#!``.
        self.started = started
        self.watchdog = watchdog
        self.argv = argv
        self.options = options
        self.store = store
        self.relay = relay
        command, has_password = redact(argv)
        self.record = RunRecord(
            id=run_id,
            name=options.name or os.path.basename(argv[0]),
            command=command,
            host=journal.this_host(),
            pid=os.getpid(),
            pid_started=journal.process_started(os.getpid()),
            mode=options.mode.value,
            state=journal.STARTING,
            started_at=utcnow(),
            watchdog_pid=watchdog.pid,
        )
        self.report = _Report(self.record, options.quiet)
        self.repairs: list[Repair] = []
        if has_password:
            self.report.warn(
                "the job's command line holds a password: every local user can read it in the"
                " process list while the job runs (govern stores and prints it as ***); put it"
                " in an option file (--defaults-file) instead"
            )

    # --- steps ------------------------------------------------------------------------
    def execute(self) -> RunResult:
        try:
            conn = connect(self.settings, command="run")
            try:
                server = detect(conn, replica_status=False)
                grants = read_grants(conn)
                account = current_account(conn)
            except pymysql.err.MySQLError as exc:
                conn.close()
                raise ServerError(f"{self.settings.describe()}: {error_text(exc)}") from None
        except ServerError as exc:
            return self._ungoverned(exc)
        self.record.server = server.identity
        self.record.connection = self.settings.describe()
        self.repairs = recover_server(conn, server, self.store, actor=f"run {self.record.id}")
        for repair in self.repairs:
            self.report.warn(
                f"repaired run {repair.record.id} ({repair.record.name}): {repair.reason}; "
                f"{repair.outcome.message}"
            )
        try:
            choice = choose(
                self.options.mode, server, grants, account, self.argv, self.options.opts_out
            )
        except ServerError as exc:
            conn.close()
            return self._ungoverned(exc)
        self.record.mode = choice.mode.value
        if choice.mode in (Mode.GLOBAL, Mode.THRESHOLD):
            if server.event_scheduler == "ON":  # an event is possible: never on a replica
                server = with_replica_status(conn, server)
            return self._holding(conn, server, choice, deadman.unavailable_reason(server, grants))
        read_only = os.environ.get(READ_ONLY_ENV) == "1"  # a scheduler job on a replica
        statement = session.init_command(server, read_only) if choice.mode is Mode.SESSION else None
        conn.close()
        if choice.mode is Mode.SESSION:
            if warning := server.slow_log_global_control_warning:
                self.report.warn(warning)
            if statement is None:
                self.report.warn(f"{server.label}: the job's sessions cannot opt out")
            problem = session.client_problem(self.argv)
            if (
                problem
                and not self.options.opts_out
                and os.path.basename(self.argv[0]) in session.CLIENTS
            ):
                self.report.warn(f"{problem}: its statements will be logged")
        return self._plain(choice, statement)

    def _ungoverned(self, error: ServerError) -> RunResult:
        """The server cannot be governed: refuse (exit 3), or run anyway with --on-error=run."""
        if self.options.on_error != "run":
            self.record.state = journal.REFUSED
            self.record.outcome = "refused"
            self.record.ended_at = utcnow()
            self.record.warnings.append(error.message)
            journal.save(self.store, self.record)
            raise error
        self.report.warn(f"{error.message}; running the job ungoverned (--on-error=run)")
        self.record.mode = Mode.NONE.value
        self.record.variable = self.record.original_value = self.record.set_value = None
        return self._plain(Choice(Mode.NONE, "--on-error=run"), None)

    def _plain(self, choice: Choice, statement: str | None) -> RunResult:
        """Modes that change nothing global: session and none."""
        env = self._env(choice.mode)
        folder = None
        if statement is not None:
            import tempfile

            folder = Path(tempfile.mkdtemp(prefix="govern-run-"))
            env.update(session.client_environment(statement, folder, os.environ))
            self.report.say(
                f"run {self.record.name} ({self.record.id}): session mode ({choice.reason}): "
                f"the job's sessions run `{statement}`; nothing global changes"
            )
        elif choice.mode is Mode.NONE:
            self.report.say(
                f"run {self.record.name} ({self.record.id}): changes nothing ({choice.reason})"
            )
        self.record.state = journal.RUNNING
        journal.save(self.store, self.record)
        try:
            job = self._job(env, on_start=None)
        finally:
            if folder is not None:
                for leftover in folder.iterdir():
                    leftover.unlink()
                folder.rmdir()
        self.record.state = journal.FINISHED
        self.record.outcome = "unchanged"
        return self._end(job, None)

    def _holding(
        self, conn: Any, server: ServerInfo, choice: Choice, no_event_because: str | None
    ) -> RunResult:
        options, record = self.options, self.record
        variable = slow_log(server) if choice.mode is Mode.GLOBAL else LONG_QUERY_TIME
        threshold = LONG_QUERY_TIME.parse(str(options.threshold))

        def want(current: int) -> int:
            return 0 if choice.mode is Mode.GLOBAL else max(current, threshold)

        event = (
            None
            if no_event_because
            else deadman.qualified_name(self.settings.database or "mysql", record.id)
        )
        watchdog = self.watchdog
        holding = Holding(
            self.settings, conn, self.store, record, variable, lease=options.lease, event=event
        )
        if self.relay.received is not None:  # a signal during the set-up: do not start
            watchdog.done()
            conn.close()
            record.state, record.outcome = journal.FINISHED, "unchanged"
            return self._end(JobResult(128 + self.relay.received, "signal before start"), None)
        try:
            before = holding.join(want)
        except ServerError as exc:  # refused, and the join undone: nothing to watch
            watchdog.done()
            conn.close()
            return self._ungoverned(exc)
        if holding.event:
            try:
                deadman.sweep(holding.conn)
            except pymysql.err.MySQLError as exc:
                self.report.warn(f"could not drop fired govern events: {error_text(exc)}")
        value = record.set_value
        if holding.joined_others:
            change = (
                f"joined {plural(holding.joined_others, 'other run')}: {variable.name} stays "
                f"{variable.show(value)}"
            )
        elif before == value:
            change = f"{variable.name} is already {variable.show(value)}"
        else:
            change = f"{variable.name} {variable.show(before)} → {variable.show(value)}"
        self.report.say(
            f"run {record.name} ({record.id}): {choice.mode} mode ({choice.reason}): {change}"
        )
        keeper = LeaseKeeper(holding, self.report.warn)
        if self.relay.received is not None:
            job = JobResult(128 + self.relay.received, ended_by="signal before start")
        else:
            try:
                job = self._job(self._env(choice.mode), on_start=keeper.start)
            finally:
                keeper.stop()
        return self._finish(holding, server, job)

    def _finish(self, holding: Holding, server: ServerInfo, job: JobResult) -> RunResult:
        record, variable = self.record, holding.variable
        record.exit_code = job.exit_code
        try:
            outcome = self._let_go(holding, server)
        except (ServerError, pymysql.err.MySQLError, OSError) as exc:
            why = exc.message if isinstance(exc, ServerError) else error_text(exc)
            self.report.warn(
                f"could not restore {variable.name} ({why}): the watchdog keeps trying; "
                "see govern status, govern recover"
            )
            result = self._end(job, None)  # saved before the watchdog reads the journal
            self.watchdog.handoff()
            return result
        now = utcnow()
        record.state = journal.FINISHED
        record.outcome = outcome.code
        record.window_end = now
        try:
            record.window_opened = holding.connections_opened()
        except pymysql.err.MySQLError as exc:
            self.report.warn(f"could not count the window's connections: {error_text(exc)}")
        if outcome.code in ("restored", "changed") and record.window_first_id:
            try:
                record.window_last_id = blind.highest_id(holding.conn)
                record.blind = blind.window_connections(
                    holding.conn,
                    record.window_first_id,
                    record.window_last_id,
                    holding.connection_ids,
                )
            except pymysql.err.MySQLError as exc:
                self.report.warn(f"could not list blind connections: {error_text(exc)}")
        holding.conn.close()
        message = outcome.message
        if record.window_opened:
            message += (
                f"; {plural(record.window_opened, 'connection')}"
                f" {'was' if record.window_opened == 1 else 'were'} opened while {variable.name} was"
                f" {variable.show(record.set_value)} (the job's own among them): each keeps it"
                " until it reconnects"
            )
        (self.report.warn if outcome.warning else self.report.say)(message)
        if record.blind:
            self._warn_blind(variable.name, variable.show(record.set_value))
        return self._end(job, outcome)

    def _let_go(self, holding: Holding, server: ServerInfo) -> Outcome:
        """Finish the hold, reconnecting once if the connection died since the last renewal."""
        try:
            return self._restore(holding, server)
        except CONNECTION_ERRORS:
            holding.reconnect()
            return self._restore(holding, server)

    def _restore(self, holding: Holding, server: ServerInfo) -> Outcome:
        first = self.record.window_first_id
        if holding.variable.is_switch and not server.session_slow_log_switch and first:
            # MySQL judges a statement by the global switch when it ends (MariaDB by the
            # session's copy): let the job's last statements end under govern's value.
            blind.wait_until_idle(holding.conn, first, holding.connection_ids, self.options.grace)
        return holding.finish()

    def _warn_blind(self, name: str, value: str) -> None:
        connections = self.record.blind
        shown = ", ".join(blind.describe(c) for c in connections[:SHOWN_BLIND])
        more = (
            f" and {len(connections) - SHOWN_BLIND} more" if len(connections) > SHOWN_BLIND else ""
        )
        kills = " ".join(f"KILL {c['id']};" for c in connections[:SHOWN_BLIND])
        self.report.warn(
            f"{plural(len(connections), 'connection')} opened while {name} was {value} keep that value "
            f"until they reconnect (sessions copy it when they connect): {shown}{more}. "
            f"Reconnect them, or: {kills}"
        )

    # --- helpers ----------------------------------------------------------------------
    def _env(self, mode: Mode) -> dict[str, str]:
        return {
            **os.environ,
            "GOVERN_RUN_ID": self.record.id,
            "GOVERN_RUN_NAME": self.record.name,
            "GOVERN_RUN_MODE": mode.value,
        }

    def _job(self, env: dict[str, str], on_start: Callable[[], None] | None) -> JobResult:
        with self._throttle_handoff(env):
            try:
                return run_job(
                    self.started,
                    env,
                    self.relay,
                    max_runtime=self.options.max_runtime,
                    grace=self.options.grace,
                    on_start=on_start,
                )
            except OSError as exc:
                self.report.warn(f"{self.argv[0]}: {exc.strerror}")
                return JobResult(126 if isinstance(exc, PermissionError) else 127)

    @contextlib.contextmanager
    def _throttle_handoff(self, env: dict[str, str]) -> Iterator[None]:
        """With --throttle: the checks, this run's account (a 0600 option file, deleted after
        the job) and the state file, in the job's $GOVERN_THROTTLE."""
        spec = self.options.throttle
        if spec is None:
            yield
            return
        from govern.connection import temporary_defaults_file
        from govern.state import default_state_path
        from govern.throttle.handoff import Handoff

        defaults = temporary_defaults_file(self.settings)
        state = self.options.state_path or default_state_path()
        env.update(Handoff(spec, str(defaults), str(state)).environment())
        self.report.say(f"run {self.record.name}: throttle for the job: {spec.describe()}")
        try:
            yield
        finally:
            defaults.unlink(missing_ok=True)
            defaults.parent.rmdir()

    def _end(self, job: JobResult, outcome: Outcome | None) -> RunResult:
        record = self.record
        record.exit_code = job.exit_code
        record.ended_at = utcnow()
        journal.save(self.store, record)
        ended = f" ({job.ended_by})" if job.ended_by else ""
        self.report.say(f"run {record.name}: the job exited {job.exit_code}{ended}")
        return RunResult(job.exit_code, record, outcome, self.repairs)
