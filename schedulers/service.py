"""``govern schedule serve``: nights on a cron trigger, with APScheduler 3.11.

APScheduler decides when a night is due, and what to do with the ones missed
while the service was down or busy: ``misfire_grace`` (a night later than that
is recorded ``missed``), ``coalesce`` (several missed nights run once, the
others are recorded ``coalesced``) and ``max_instances = 1`` (a night that would
overlap a running one is recorded ``skipped``).

Two small extensions make that survive restarts and tell the story:

- the next fire time is saved in the state store each time APScheduler moves it,
  and given back at start, so a night missed while the service was down is seen
  as a misfire (APScheduler's own memory store forgets it);
- each run receives its scheduled fire time, which jobs get as
  ``GOVERN_SCHEDULED_FOR`` (which day to summarise) and the history keeps;
- a fire APScheduler reports missed (``EVENT_JOB_MISSED``) goes to the catalog's
  ``on_missed_fire`` hook as well as to the history.

One service per state file and catalog (APScheduler supports one process per
job store): a second one is refused. The night itself also takes the catalog's
lock on the workers, so a manual ``govern schedule run`` never overlaps it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobEvent,
    JobExecutionEvent,
    JobSubmissionEvent,
)
from apscheduler.executors.base import run_job
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler

from govern import pidlock
from govern.errors import EXIT_SERVER, ConfigError, GovernError, ServerError
from govern.output import info
from govern.schedulers.catalog import ScheduleSpec, load_catalog
from govern.schedulers.cron import make_trigger
from govern.schedulers.history import History, NightLabel
from govern.schedulers.hooks import Hooks, make_event
from govern.schedulers.lease import ActiveLease
from govern.schedulers.runner import StopRequest
from govern.state import StateStore
from govern.units import duration

NIGHT_JOB_ID = "night"


class _RememberingJobStore(MemoryJobStore):
    """APScheduler's memory store that also saves the night's next fire time."""

    def __init__(self, remember: Callable[[datetime | None], None]) -> None:
        super().__init__()
        self._remember = remember

    def add_job(self, job: Any) -> None:
        super().add_job(job)
        if job.id == NIGHT_JOB_ID:  # not a standby's one-off takeover
            self._remember(job.next_run_time)

    def update_job(self, job: Any) -> None:
        super().update_job(job)
        if job.id == NIGHT_JOB_ID:
            self._remember(job.next_run_time)

    def remove_job(self, job_id: str) -> None:
        super().remove_job(job_id)
        if job_id == NIGHT_JOB_ID:
            self._remember(None)


class _Stamped:
    """A job as run_job sees it, with its scheduled fire time added to the call."""

    def __init__(self, job: Any, run_time: datetime) -> None:
        self._job = job
        self.kwargs = {**job.kwargs, "scheduled_for": run_time}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._job, name)

    def __str__(self) -> str:
        return str(self._job)


class _StampingExecutor(ThreadPoolExecutor):
    """One thread (nights never overlap). Gives each run its fire time, and reports the
    fire times coalescing folded into it (APScheduler 3 drops them silently)."""

    def __init__(self, on_coalesced: Callable[[list[datetime], datetime], None]) -> None:
        super().__init__(max_workers=1)
        self._on_coalesced = on_coalesced

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        due = job._get_run_times(run_times[-1])  # every fire from the job's next_run_time on
        folded = [t for t in due if t not in run_times]
        if folded:
            self._on_coalesced(folded, run_times[-1])

        def run_each(alias: str, logger_name: str) -> list[Any]:
            events: list[Any] = []
            for run_time in run_times:
                events += run_job(_Stamped(job, run_time), alias, [run_time], logger_name)
            return events

        def done(future: Any) -> None:
            exc = future.exception()
            if exc is not None:
                self._run_job_error(job.id, exc, exc.__traceback__)
            else:
                self._run_job_success(job.id, future.result())

        future = self._pool.submit(run_each, job._jobstore_alias, self._logger.name)
        future.add_done_callback(done)


class AlreadyServing(GovernError):
    """Another ``serve`` has this catalog and state file: exit 3, as a second night meets
    the run lock."""

    exit_code = EXIT_SERVER


class _ServeLock:
    """One serve per state file and catalog: an flock the kernel drops if we die."""

    def __init__(self, store: StateStore, schedule: str) -> None:
        self.path = store.path.parent / f"serve-{schedule}.lock"
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        try:
            handle = pidlock.take(self.path)
        except pidlock.LockHeld as held:
            raise AlreadyServing(
                f"another `govern schedule serve` (pid {held.holder}) already serves this catalog"
                f" with this state file ({self.path})"
            ) from None
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the flock
            self._handle = None


class NightService:
    """The service without the signal handling: tests drive it (and its clock) directly."""

    def __init__(
        self,
        catalog_path: Path,
        state_path: str | os.PathLike[str] | None,
        *,
        notify: Callable[[str], None] = info,
    ) -> None:
        self.catalog_path = Path(catalog_path)
        self.catalog = load_catalog(self.catalog_path)
        if self.catalog.schedule is None:
            raise ConfigError(
                f"{self.catalog.path}: serve needs a [schedule] table with a cron line"
            )
        self.spec: ScheduleSpec = self.catalog.schedule
        self.state_path = state_path
        self.notify = notify
        self.stop = StopRequest()
        self.store = StateStore.open(state_path)
        self.history = History(self.store)
        self._lock = _ServeLock(self.store, self.catalog.name)
        #: on_missed_fire (the nights' own hooks are run_night's)
        self.hooks = Hooks(self.catalog, say=self.notify)
        self.scheduler = BackgroundScheduler(
            timezone=self.spec.timezone,
            jobstores={"default": _RememberingJobStore(self._remember)},
            executors={"default": _StampingExecutor(self._record_coalesced)},
            job_defaults={
                "misfire_grace_time": max(int(self.spec.misfire_grace), 1),
                "coalesce": self.spec.coalesce,
                "max_instances": 1,
            },
        )
        self.scheduler.add_listener(
            self._on_event, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_ERROR
        )
        #: serve on two hosts ([schedule] lease): the lock on the primary, and its watcher
        self.lease: ActiveLease | None = None
        #: set when serve must end: a signal (serve_forever), or the lease lost
        self.done = threading.Event()
        self.lost_lease = False
        self._watcher: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._lock.acquire()
        try:
            for night in self.history.reap_stale():
                self.notify(
                    f"night {night} was left running by an ended process: marked interrupted"
                )
            trigger = make_trigger(self.spec.cron, self.spec.timezone)
            remembered = self.history.remembered_fire(self.catalog.name, self.spec.description)
            extra = {"next_run_time": datetime.fromisoformat(remembered)} if remembered else {}
            self.scheduler.add_job(
                self._night,
                trigger,
                id=NIGHT_JOB_ID,
                name=f"night of {self.catalog.name}",
                replace_existing=True,
                **extra,
            )
            if self.spec.lease is None:
                self.scheduler.start()
            else:
                self._start_leased()
        except BaseException:
            self._lock.release()
            raise
        if self.spec.lease is None:
            self._serving()

    def _serving(self) -> None:
        job = self.scheduler.get_job(NIGHT_JOB_ID)
        self.notify(
            f"serving {self.catalog.name}: {self.spec.description}, next night "
            f"{job.next_run_time.isoformat() if job and job.next_run_time else 'never'}"
        )

    # --- two hosts: active and standby ----------------------------------------------------
    def _start_leased(self) -> None:
        """Active if the lock on the primary is free, else standby: a thread asks for it every
        lease, and once active checks every lease that it still holds it."""
        primary = self.catalog.primary_settings()
        assert primary is not None and self.spec.lease is not None  # the catalog checked
        self.lease = ActiveLease(primary, self.catalog.name)
        if self.lease.take():
            self._activate("the lock was free")
        else:
            holder = self.lease.holder()
            self.notify(
                f"standby for {self.catalog.name}: lock {self.lease.name} on the primary is held"
                + (f" by connection {holder}" if holder else "")
                + (f" ({self.lease.problem})" if self.lease.problem else "")
                + f"; asking again every {self.spec.lease:g}s"
            )
        self._watcher = threading.Thread(target=self._watch, name="lease", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        assert self.lease is not None and self.spec.lease is not None
        active = self.scheduler.running
        while not self.done.wait(self.spec.lease):
            if not active:
                if self.lease.take():
                    active = True
                    self._activate("the active serve let go of the lock (or died)")
                continue
            if not self.lease.held():
                self.notify(
                    f"lost lock {self.lease.name} on the primary"
                    + (f" ({self.lease.problem})" if self.lease.problem else "")
                    + ": stopping the night's jobs and ending serve (the standby takes over)"
                )
                self.lost_lease = True
                self.stop.request(0)
                self.done.set()
                return

    def _activate(self, why: str) -> None:
        """This serve becomes the active one: nights some host left unfinished in the ledger
        go on first, then the cron trigger runs."""
        from govern.schedulers.ledger import NightLedger

        assert self.lease is not None
        self.notify(f"active for {self.catalog.name}: holding lock {self.lease.name} ({why})")
        primary = self.catalog.primary_settings()
        assert primary is not None
        try:
            with NightLedger(primary, self.catalog.name) as ledger:
                unfinished = ledger.unfinished()
        except GovernError as exc:
            self.notify(f"cannot read the ledger on the primary: {exc.message}")
            unfinished = []
        for night in unfinished:
            self.scheduler.add_job(
                self._night,
                "date",
                run_date=datetime.now().astimezone(),
                kwargs={"takeover": night},
                id=f"takeover {night}",
                name=f"night {night} of {self.catalog.name}, taken over",
                misfire_grace_time=None,
            )
            self.notify(f"taking over the night scheduled for {night}, left unfinished")
        self.scheduler.start()
        self._serving()

    def shutdown(self, grace: float | None = None) -> None:
        """Start no new night; a running one starts nothing new and gets ``grace`` to finish."""
        self.stop.request(self.spec.shutdown_grace if grace is None else grace)
        self.done.set()
        if self._watcher is not None:
            self._watcher.join()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.hooks.wait()
        if self.lease is not None:
            self.lease.close()  # the standby takes over from here
        self._lock.release()
        self.store.close()

    # --- APScheduler's callbacks -------------------------------------------------------------
    def _night(self, scheduled_for: datetime | None = None, takeover: str | None = None) -> None:
        """One fire of the trigger: a whole night, recorded whatever happens.

        ``scheduled_for`` always comes from _StampingExecutor; APScheduler checks the
        signature against the job's arguments, which do not include it, hence the default.
        ``takeover``: the fire time of a night another serve left unfinished (the ledger)."""
        from govern.schedulers.ledger import NightLedger
        from govern.schedulers.night import NightAlreadyRan, run_night
        from govern.schedulers.workers import LockHeld

        if takeover is not None:
            scheduled_for = datetime.fromisoformat(takeover)
        if scheduled_for is None:
            scheduled_for = datetime.now().astimezone()

        with StateStore.open(self.state_path) as store:  # this thread's own connection
            history = History(store)
            if self.stop.is_set():  # a later missed night, after SIGTERM (coalesce = false)
                self._unrun(history, scheduled_for, "skipped", "the service was stopping")
                return
            try:
                catalog = load_catalog(self.catalog_path)  # edits apply from the next night on
            except GovernError as exc:
                self._unrun(history, scheduled_for, "error", exc.message)
                self.hooks.fire(  # the catalog as it was when serve started says where to
                    make_event(
                        "failure",
                        self.catalog,
                        reason=f"the catalog cannot be read: {exc.message}",
                        scheduled_for=scheduled_for.isoformat(),
                        status="error",
                    )
                )
                return
            if catalog.schedule != self.spec:
                self.notify("the [schedule] table changed: restart serve to apply it")
            self.notify(
                f"night of {catalog.name} scheduled for {scheduled_for.isoformat()}: starting"
            )
            primary = catalog.primary_settings() if self.spec.lease is not None else None
            try:
                with contextlib.ExitStack() as stack:
                    ledger = None
                    if primary is not None:
                        ledger = stack.enter_context(NightLedger(primary, catalog.name))
                    night = run_night(
                        catalog,
                        store,
                        trigger="cron",
                        scheduled_for=scheduled_for,
                        stop=self.stop,
                        show_progress=False,
                        notify=self.notify,
                        ledger=ledger,
                    )
            except (LockHeld, NightAlreadyRan) as exc:
                self._unrun(history, scheduled_for, "skipped", exc.message)
                return
            except GovernError as exc:
                self._unrun(history, scheduled_for, "error", exc.message)
                return
            summary = night.get("summary") or {}
            outcomes = ", ".join(f"{n} {o}" for o, n in sorted(summary.get("outcomes", {}).items()))
            waits = ", ".join(
                f"{worker} {duration(seconds, 'clock')}"
                for worker, seconds in sorted(summary.get("lag_waits_s", {}).items())
                if seconds
            )
            self.notify(
                f"night {night['id']} of {catalog.name}: {night['status']} ({outcomes}),"
                f" makespan {summary.get('makespan_s', 0):.1f}s, done at half the makespan"
                f" {summary.get('done_at_half_makespan', 0):.1%}"
                + (f", waited for replica lag: {waits}" if waits else "")
                + (f"; {night['note']}" if night.get("note") else "")
                + self._next_night()
            )

    def _unrun(self, history: History, scheduled_for: datetime, status: str, note: str) -> None:
        label = NightLabel(
            self.catalog.name,
            str(self.catalog.path),
            self.catalog.policy,
            "cron",
            scheduled_for.isoformat(),
        )
        history.record_unrun_night(label, status, note)
        self.notify(
            f"night scheduled for {scheduled_for.isoformat()}: {status}: {note}{self._next_night()}"
        )

    def _next_night(self) -> str:
        """``; next night <time>``: when serve will start one again (once it runs)."""
        job = self.scheduler.get_job(NIGHT_JOB_ID) if self.scheduler.running else None
        if job is None or job.next_run_time is None:
            return ""
        return f"; next night {job.next_run_time.isoformat()}"

    def _remember(self, next_fire: datetime | None) -> None:
        self.history.remember_fire(
            self.catalog.name, self.spec.description, next_fire.isoformat() if next_fire else None
        )

    def _record_coalesced(self, folded: list[datetime], into: datetime) -> None:
        for fire in folded:
            self._unrun(
                self.history, fire, "coalesced", f"folded into the night of {into.isoformat()}"
            )

    def _on_event(self, event: JobEvent) -> None:
        if isinstance(event, JobExecutionEvent) and event.code == EVENT_JOB_MISSED:
            late = datetime.now(event.scheduled_run_time.tzinfo) - event.scheduled_run_time
            note = f"{late.total_seconds():.0f}s late, beyond misfire_grace {self.spec.misfire_grace:g}s"
            self._unrun(self.history, event.scheduled_run_time, "missed", note)
            self.hooks.fire(
                make_event(
                    "missed_fire",
                    self.catalog,
                    reason=f"the night scheduled for {event.scheduled_run_time.isoformat()}"
                    f" was not run: {note}",
                    scheduled_for=event.scheduled_run_time.isoformat(),
                    status="missed",
                )
            )
        elif isinstance(event, JobSubmissionEvent) and event.code == EVENT_JOB_MAX_INSTANCES:
            for fire in event.scheduled_run_times:
                self._unrun(self.history, fire, "skipped", "the previous night was still running")
        elif isinstance(event, JobExecutionEvent) and event.code == EVENT_JOB_ERROR:
            self.notify(f"night failed inside govern: {event.exception!r}")


def serve_forever(catalog_path: Path, state_path: str | None) -> None:
    """Run the service until SIGTERM/SIGINT; a second signal stops running jobs at once."""
    service = NightService(catalog_path, state_path)
    requested = service.done
    signals = 0

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            info(
                f"{signal.Signals(signum).name}: finishing (shutdown_grace {service.spec.shutdown_grace:g}s)"
            )
            service.stop.request(service.spec.shutdown_grace)
        else:
            info("second signal: stopping running jobs now")
            service.stop.request(0)
        requested.set()

    previous = {
        s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    }
    try:
        try:
            service.start()
        except BaseException:
            service.store.close()  # refused or failed: it never served, nothing to stop
            raise
        try:
            while not requested.wait(timeout=3600):
                pass
        finally:
            service.shutdown(grace=service.stop.grace if service.stop.is_set() else None)
            info(f"stopped serving {service.catalog.name}")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if service.lost_lease:
        raise ServerError(f"serve of {service.catalog.name} lost its lock on the primary")
