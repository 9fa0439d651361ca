"""Run a planned night for real: one loop, one process group per running job.

Whenever a lane is free it takes the job the policy picks among the ready ones
(the same :class:`Dispatcher` the plan simulated), unless the lag guard (a
:class:`govern.throttle.Throttler` per replica) holds its replica back. A failed
job does not stop the others: it is retried after ``retry_delay`` up to
``retries`` times, and only the jobs that depend on it are skipped. A job past
its ``timeout`` gets TERM, then KILL after ``kill_grace``.

Stopping (Ctrl-C, SIGTERM, the service shutting down) starts nothing new; running
jobs get ``grace`` seconds to finish, then TERM. Every attempt's output goes to
its own 0600 log file; the last line of a failed one is kept as the reason.
Without a progress bar (a pipe, cron, ``serve``) each job says when it starts and ends,
one line each, so a night can be followed as it runs.

Deadlines are watched on the wall clock: the moment a job's (or the night's) deadline
passes with the job (the night) not done, the miss is said, recorded, and handed to the
``on_deadline_miss`` hook; a job that fails for good goes to ``on_failure``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from govern.output import info
from govern.progress import Progress
from govern.schedulers.catalog import JobSpec
from govern.schedulers.deadlines import Due
from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.history import History
from govern.schedulers.hooks import Hooks, make_event
from govern.schedulers.launch import Attempt, Process, job_argv, job_environment, mysql_client
from govern.schedulers.plan import Plan
from govern.schedulers.policies import Lane
from govern.schedulers.rerun import Carried
from govern.schedulers.workers import ServerPool, Worker
from govern.throttle.handoff import Handoff
from govern.throttle.record import HoldContext
from govern.units import duration

#: The longest wait between looks at timeouts, the lag guard, retries and a stop request.
#: A job's end wakes the loop at once and is timed by its own watcher thread
#: (:class:`Process`), so completion times have no tick.
LOOK_EVERY = 0.05
#: Skipped jobs named one line each at once; the rest are counted (the history has all).
SKIP_LINES = 10


class StopRequest:
    """Ask a night to stop: it starts nothing new, and running jobs get ``grace`` seconds
    before TERM. A later request can only shorten the grace (a second Ctrl-C)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.grace = math.inf

    def request(self, grace: float) -> None:
        self.grace = min(self.grace, grace)
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


@dataclasses.dataclass
class Running:
    job: JobSpec
    lane: Lane
    number: int
    process: Process
    started: float  # offset from the night's start
    deadline: float | None
    timed_out: bool = False
    interrupted: bool = False


@dataclasses.dataclass
class NightResult:
    finishes: dict[str, float]  # successful jobs -> completion offset
    outcomes: dict[str, str]  # every job -> its final outcome
    durations: dict[str, float]  # jobs that ran -> the last attempt's run time
    stopped: bool
    ended_at: float = 0.0  # offset when the last attempt ended: the night's length
    #: deadlines that passed with their job (job None: the night) not done
    deadline_misses: list[dict[str, object]] = dataclasses.field(default_factory=list)
    #: what the night's note says (a worker given up past the lag guard's max_wait)
    notes: list[str] = dataclasses.field(default_factory=list)


class NightRunner:
    def __init__(
        self,
        plan: Plan,
        pool: ServerPool,
        history: History,
        night_id: int,
        *,
        scheduled_for: str,
        log_dir: Path,
        stop: StopRequest | None = None,
        notify: Callable[[str], None] = info,
        job_lines: bool = False,
        hooks: Hooks | None = None,
        due: Due | None = None,
        night_date: str | None = None,
        carried: Carried | None = None,
        on_job: Callable[[str, str, int], None] | None = None,
    ) -> None:
        self.plan = plan
        self.catalog = plan.catalog
        self.pool = pool
        self.history = history
        self.night_id = night_id
        self.scheduled_for = scheduled_for
        self.log_dir = log_dir / self.catalog.name / str(night_id)
        self.stop = stop or StopRequest()
        self.notify = notify
        #: Say when each job starts and ends (no progress bar shows it).
        self.job_lines = job_lines
        self.client = mysql_client()
        self.dispatcher = Dispatcher(plan.policy, plan.tasks, plan.lanes, self.catalog.pools)
        self.running: dict[int, Running] = {}  # lane index -> what runs there
        #: the night's {date}: jobs get it as $GOVERN_DATE
        self.night_date = night_date
        #: a resumed night: what earlier runs settled, attempts numbered on, its clock going on
        self.carried = carried
        self.attempts: dict[str, int] = dict(carried.attempts) if carried else {}
        self._earlier_attempts = dict(self.attempts)
        #: told when a job starts (``running``) and ends (its outcome): the ledger on the
        #: primary that a standby serve reads (ledger.py)
        self.on_job = on_job
        self.result = NightResult({}, {}, {}, stopped=False)
        if carried is not None:
            planned = {j.name for j in plan.catalog.jobs}
            self.result.outcomes.update(
                (n, o) for n, o in carried.outcomes.items() if n not in planned
            )
            self.result.finishes.update(
                (n, f) for n, f in carried.finishes.items() if n not in planned
            )
            self.result.durations.update(
                (n, d) for n, d in carried.durations.items() if n not in planned
            )
        self._t0 = 0.0
        self._stop_seen: float | None = None
        #: worker -> when its current lag hold began; workers given up past max_wait
        self._held_since: dict[str, float] = {}
        self._given_up: set[str] = set()
        self._progress: Progress | None = None
        self._wake = threading.Event()  # set when a job ends
        self.hooks = hooks
        self.due = due or Due(None, {})
        #: (deadline, job or "" for the night): the next one to pass first
        self._deadlines: list[tuple[datetime, str]] = [(d, n) for n, d in self.due.jobs.items()]
        if self.due.night is not None:
            self._deadlines.append((self.due.night, ""))
        heapq.heapify(self._deadlines)

    def now(self) -> float:
        return time.monotonic() - self._t0

    # --- the loop -------------------------------------------------------------------------
    def run(self, progress: Progress) -> NightResult:
        self._progress = progress
        self._t0 = time.monotonic()
        if self.carried is not None:
            self._t0 -= self.carried.offset(datetime.now(UTC))
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._watch_lag()
        self._skipped(list(self.dispatcher.skipped))
        with self._ctrl_c_stops_the_night():
            while not self.dispatcher.finished:
                self._wake.clear()
                self._step()
                self._wake.wait(LOOK_EVERY)
        self._finish_lag_accounting()
        return self.result

    @contextlib.contextmanager
    def _ctrl_c_stops_the_night(self) -> Iterator[None]:
        """Ctrl-C asks the night to stop (a second one KILLs the jobs) instead of raising
        KeyboardInterrupt halfway through starting a job. Main thread only."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        interrupts = 0

        def on_interrupt(signum: int, frame: FrameType | None) -> None:
            nonlocal interrupts
            interrupts += 1
            self.stop.request(0)
            if interrupts > 1:
                for run in self.running.values():
                    run.process.reap_group()

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def abort(self) -> None:
        """Something went wrong in govern itself: end every running job, leave nothing behind."""
        for run in self.running.values():
            run.process.terminate()
        deadline = time.monotonic() + self.catalog.kill_grace
        while time.monotonic() < deadline and any(
            r.process.poll() is None for r in self.running.values()
        ):
            self._wake.wait(LOOK_EVERY)
            self._wake.clear()
        for run in self.running.values():
            run.process.reap_group()
            run.process.poll()

    def _step(self) -> None:
        now = self.now()
        if self.stop.is_set() and self._stop_seen is None:
            self._stop_seen = now
            self.result.stopped = True
            self._skipped(self.dispatcher.abandon("the night was stopped before it started"))
        if self._stop_seen is not None and now >= self._stop_seen + self.stop.grace:
            for run in self.running.values():
                run.interrupted = True
                run.process.terminate()
        for index in list(self.running):
            self._check(index)
        self._check_deadlines(now)
        if self._stop_seen is None:
            self._start_free_lanes(now)

    def _check_deadlines(self, now: float) -> None:
        """Say, record and hand to on_deadline_miss every deadline passed with its work not
        done: once each, at the moment it passes (a job that ended before it did not miss)."""
        wall = datetime.now(UTC)
        while self._deadlines and self._deadlines[0][0] <= wall:
            due, name = heapq.heappop(self._deadlines)
            if name and name in self.result.outcomes:
                continue  # settled before its deadline (ok, failed, skipped)
            if not name and self.dispatcher.finished:
                continue
            state = ("running" if name in self.dispatcher.running else "pending") if name else None
            self.result.deadline_misses.append(
                {
                    "job": name or None,
                    "deadline": due.isoformat(timespec="seconds"),
                    "detected_s": round(now, 3),
                    "state": state,
                }
            )
            what = f"job {name} ({state})" if name else "the night"
            reason = f"{what} not done by its deadline {due.isoformat(timespec='seconds')}"
            self.notify(f"deadline missed: {reason}")
            if self.hooks is not None:
                self.hooks.fire(
                    make_event(
                        "deadline_miss",
                        self.catalog,
                        scope="job" if name else "night",
                        reason=reason,
                        night_id=self.night_id,
                        scheduled_for=self.scheduled_for,
                        job=name or None,
                        worker=self._worker_of(name),
                        deadline=due,
                        status=state or "running",
                    )
                )

    def _worker_of(self, name: str) -> str | None:
        return next((r.lane.worker for r in self.running.values() if r.job.name == name), None)

    def _start_free_lanes(self, now: float) -> None:
        if not self.dispatcher.pending:  # nothing left to start: no lane waits for lag now
            self._finish_lag_accounting()
            return
        # The lag is checked whether or not a job is ready: a replica is held (and waits)
        # for as long as it lags, not only while a job would have started there.
        held = {w.spec.name for w in self.pool.usable() if self.pool.lag_holds(w.spec.name)}
        self._watch_max_wait(held, now)
        held |= self._given_up
        for lane in self.plan.lanes:
            if lane.index in self.running or lane.worker in held:
                continue
            if not self.dispatcher.has_ready(now):
                break
            task = self.dispatcher.take(lane, now)
            if task is not None:
                self._start(self.catalog.job(task.name), lane, now)

    def _watch_max_wait(self, held: set[str], now: float) -> None:
        """A worker held without a break for the lag guard's max_wait is given up for the
        night: its jobs move to the other workers, and those only it may run (or all, when
        no worker is left) are skipped with the reason, so the night ends failed instead of
        waiting for as long as replication stays broken."""
        guard = self.catalog.lag_guard
        for name in list(self._held_since):
            if name not in held:
                del self._held_since[name]
        for name in held - self._given_up:
            since = self._held_since.setdefault(name, now)
            if guard is None or guard.max_wait is None or now - since < guard.max_wait:
                continue
            self._given_up.add(name)
            lag = self.pool.worker(name).lag
            why = f" ({lag.reason})" if lag is not None else ""
            reason = (
                f"worker {name} was given up: held by the lag guard for more than max_wait"
                f" {duration(guard.max_wait, 'clock')}{why}"
            )
            left = {lane.worker for lane in self.plan.lanes} - self._given_up
            moved = "its jobs move to " + ", ".join(sorted(left)) if left else "no worker is left"
            self.notify(f"lag guard {name}: {reason}: {moved}")
            self.result.notes.append(reason)
            self._skipped(self.dispatcher.lose_worker(name, reason))

    def _watch_lag(self) -> None:
        """The lag guards record their holds in the night's history and say when a hold
        starts and ends (docs/design/throttling.md, "The scheduler's lag guard")."""
        for worker in self.pool.usable():
            if worker.guard is not None:
                worker.guard.notify = self.notify
                worker.guard.log = self.history.hold_log(
                    HoldContext(
                        "lag guard",
                        server=worker.settings.describe(),
                        night_id=self.night_id,
                        worker=worker.spec.name,
                    )
                )

    def _finish_lag_accounting(self) -> None:
        for worker in self.pool.usable():
            if worker.guard is not None:
                worker.guard.close_holds()

    # --- one attempt ------------------------------------------------------------------------
    def _start(self, job: JobSpec, lane: Lane, now: float) -> None:
        number = self.attempts.get(job.name, 0) + 1
        self.attempts[job.name] = number
        worker = self.pool.worker(lane.worker)
        assert worker.handle is not None
        log_path = self.log_dir / f"{job.name}.{number}.log"
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        attempt = Attempt(
            schedule=self.catalog.name,
            night_id=self.night_id,
            scheduled_for=self.scheduled_for,
            job=job,
            number=number,
            worker=lane.worker,
            rows=self.plan.sizes.rows.get(job.name),
        )
        # Recorded before the fork: a scheduler killed right after it leaves an attempt that
        # the next night marks interrupted, never a job that ran without a record. Its start
        # is set exactly when it ends (the fork's time, after this commit).
        self.history.attempt_started(
            self.night_id, job.name, number, lane.worker, lane.label, now, str(log_path)
        )
        with os.fdopen(fd, "wb") as log:
            try:
                argv = job_argv(job, worker.handle, self.client, self.catalog.kill_grace)
                env = job_environment(
                    os.environ, attempt, worker.handle, self.pool.primary, self._throttle(worker)
                )
                if self.night_date is not None:
                    env["GOVERN_DATE"] = self.night_date
                process = Process(argv, env, self.catalog.directory, job.sql, log, wake=self._wake)
            except OSError as exc:
                log.write(f"govern: cannot start the job: {exc}\n".encode())
                self._finish_attempt(job, lane, number, now, now, "failed", None, str(exc))
                return
        # The job's clock starts at its fork, not before govern's own bookkeeping (the
        # history's commit cost 50 ms or more a job on a loaded disk before).
        started = process.started_at - self._t0
        if self.on_job is not None:
            self.on_job(job.name, "running", number)
        deadline = started + job.timeout if job.timeout else None
        self.running[lane.index] = Running(job, lane, number, process, started, deadline)
        if self.job_lines:
            again = f" (attempt {number})" if number > 1 else ""
            self.notify(f"job {job.name} started on {lane.worker}{again}")

    def _throttle(self, worker: Worker) -> Handoff | None:
        """The catalog's [throttle] for a job: checks on the primary when the catalog has one
        (where summaries are written), else on the job's worker; holds in the night's history."""
        if self.catalog.throttle is None or worker.handle is None:
            return None
        server = self.pool.primary or worker.handle
        return Handoff(
            self.catalog.throttle, str(server.defaults_file), str(self.history.store.path)
        )

    def _check(self, index: int) -> None:
        run = self.running[index]
        code = run.process.poll()
        ended = run.process.ended_at
        now = self.now() if code is None or ended is None else ended - self._t0
        if code is None:
            if run.deadline is not None and now >= run.deadline and not run.timed_out:
                run.timed_out = True
                run.process.terminate()
            run.process.kill_if_overdue(self.catalog.kill_grace)
            return
        del self.running[index]
        if run.process.term_sent_at is not None:
            run.process.reap_group()
        if run.interrupted:
            outcome = "interrupted"
        elif run.timed_out:
            outcome = "timeout"
        else:
            outcome = "ok" if code == 0 else "failed"
        reason = None
        if outcome == "timeout":
            reason = f"timed out after {run.job.timeout:g}s"
        elif outcome != "ok":
            last = _last_line(self.log_dir / f"{run.job.name}.{run.number}.log")
            reason = f"exit {code}" + (f": {last}" if last else "")
        self._finish_attempt(run.job, run.lane, run.number, run.started, now, outcome, code, reason)

    def _finish_attempt(
        self,
        job: JobSpec,
        lane: Lane,
        number: int,
        started: float,
        now: float,
        outcome: str,
        code: int | None,
        reason: str | None,
    ) -> None:
        retry = (
            outcome in ("failed", "timeout")
            and number - self._earlier_attempts.get(job.name, 0) <= job.retries
            and self._stop_seen is None
        )
        self.history.attempt_finished(
            self.night_id,
            job.name,
            number,
            start_s=started,
            finish_s=now,
            outcome=outcome,
            exit_code=code,
            final=not retry,
            duration_s=now - started,
            reason=reason,
        )
        self.result.durations[job.name] = now - started
        self.result.ended_at = max(self.result.ended_at, now)
        if retry:
            self.notify(
                f"job {job.name} {outcome} on {lane.worker} ({reason}); retry"
                f" {number - self._earlier_attempts.get(job.name, 0)}/{job.retries}"
                f" in {job.retry_delay:g}s"
            )
            self.dispatcher.retry(job.name, now + job.retry_delay)
            return
        self.result.outcomes[job.name] = outcome
        if self.on_job is not None:
            self.on_job(job.name, outcome, number)
        if self._progress is not None:
            self._progress.advance()
        if outcome == "ok":
            self.dispatcher.succeed(job.name)
            self.result.finishes[job.name] = now
            if self.job_lines:
                took = duration(now - started, "clock")
                self.notify(f"job {job.name} ok on {lane.worker} in {took}")
            return
        self.notify(f"job {job.name} {outcome} on {lane.worker}: {reason}")
        if self.hooks is not None and outcome in ("failed", "timeout"):
            self.hooks.fire(
                make_event(
                    "failure",
                    self.catalog,
                    scope="job",
                    reason=f"job {job.name} {outcome} on {lane.worker}: {reason}",
                    night_id=self.night_id,
                    scheduled_for=self.scheduled_for,
                    job=job.name,
                    worker=lane.worker,
                    deadline=self.due.jobs.get(job.name),
                    status=outcome,
                )
            )
        self._skipped(self.dispatcher.fail(job.name))

    def _skipped(self, names: list[str]) -> None:
        """Record jobs the dispatcher skipped (with its reasons), in one transaction."""
        fresh = [n for n in names if n not in self.result.outcomes]
        if not fresh:
            return
        reasons = [(n, self.dispatcher.skipped[n]) for n in fresh]
        self.history.jobs_skipped(self.night_id, reasons)
        for index, (name, reason) in enumerate(reasons):
            self.result.outcomes[name] = "skipped"
            if self.on_job is not None and self._stop_seen is None:  # a stop leaves it to resume
                self.on_job(name, "skipped", self.attempts.get(name, 0))
            if self.job_lines and index < SKIP_LINES:
                self.notify(f"job {name} skipped: {reason}")
        if self.job_lines and len(reasons) > SKIP_LINES:
            self.notify(
                f"and {len(reasons) - SKIP_LINES} more jobs skipped (govern schedule history"
                f" --night {self.night_id} lists each with its reason)"
            )
        if self._progress is not None:
            self._progress.advance(len(fresh))


def _last_line(path: Path, limit: int = 4096) -> str | None:
    """The last non-empty line of a log (its tail only), for the history's reason column."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - limit, 0))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:300] if lines else None
