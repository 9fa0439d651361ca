"""One night from start to end, for ``govern schedule run`` and each fire of ``serve``:
lock, plan, record, run, summarise.
"""

from __future__ import annotations

import functools
import shutil
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from govern.errors import GovernError, ServerError, UsageError
from govern.output import info, is_terminal, warn
from govern.progress import progress
from govern.schedulers.catalog import Catalog
from govern.schedulers.deadlines import Due, due_times
from govern.schedulers.estimates import estimate_error
from govern.schedulers.history import History, NightLabel
from govern.schedulers.hooks import Hooks, make_event
from govern.schedulers.ledger import LedgerNight, NightLedger
from govern.schedulers.metrics import night_metrics
from govern.schedulers.plan import Plan, make_plan
from govern.schedulers.readiness import Readiness, wait_until_ready
from govern.schedulers.rerun import (
    ENDED,
    Carried,
    NothingLeft,
    Rerun,
    chooser,
    find_carried,
    with_date,
)
from govern.schedulers.runner import NightResult, NightRunner, StopRequest
from govern.schedulers.workers import LockHeld, ServerPool
from govern.state import StateStore, utcnow
from govern.units import duration, plural

#: Nights whose job logs are kept, per catalog (the history itself is kept whole).
KEEP_LOGS = 30


def log_dir(store: StateStore) -> Path:
    """Job logs live next to the state file: ``schedule-logs/CATALOG/NIGHT/JOB.N.log``."""
    return store.path.parent / "schedule-logs"


def secrets_dir(store: StateStore) -> Path:
    """The option files handed to jobs live next to the state file too (0700), one folder
    per process, deleted after the night (or by the next night if the process was killed)."""
    return store.path.parent / "schedule-run"


def prune_logs(folder: Path, keep: int = KEEP_LOGS) -> None:
    """Delete the job logs of all but the ``keep`` newest nights in ``folder``."""
    nights = sorted((p for p in folder.glob("*") if p.name.isdigit()), key=lambda p: int(p.name))
    for old in nights[:-keep] if keep else nights:
        shutil.rmtree(old, ignore_errors=True)


def run_night(
    catalog: Catalog,
    store: StateStore,
    *,
    policy: str | None = None,
    trigger: str = "manual",
    scheduled_for: datetime | None = None,
    stop: StopRequest | None = None,
    show_progress: bool | None = None,
    notify: Callable[[str], None] = info,
    rerun: Rerun | None = None,
    ledger: NightLedger | None = None,
) -> dict[str, Any]:
    """Run every job of ``catalog`` now; returns the night's ``govern.schedule.night`` document.

    ``rerun`` narrows it (``--date``, ``--job``) or goes on with the last night
    (``--resume``, ``--only-failed``): govern/schedulers/rerun.py. ``ledger`` (serve on two
    hosts) is the night's record on the primary: what another host ended of this night is
    not run again, and every job's start and end is written there (ledger.py). Raises
    NightAlreadyRan when the ledger says the night ended.

    Raises LockHeld (exit 3) when another night of this catalog runs, ServerError when no
    worker can be reached, ConfigError when the sizing query is wrong: all before any job
    (each fires on_failure, but LockHeld, NightAlreadyRan and a refused rerun option). A
    ``[ready_when]`` that stays false until its timeout ends the night ``failed`` before any
    job, and fires on_failure.
    """
    hooks = Hooks(catalog)
    try:
        return _run_night(
            catalog,
            store,
            hooks,
            policy=policy,
            trigger=trigger,
            scheduled_for=scheduled_for,
            stop=stop,
            show_progress=show_progress,
            notify=notify,
            rerun=rerun or Rerun(),
            ledger=ledger,
        )
    except GovernError as exc:
        quiet = (LockHeld, NightAlreadyRan, UsageError)  # another night runs, or the user's call
        if not isinstance(exc, quiet) and not hooks.fired:  # failed before any job
            when = scheduled_for or datetime.now().astimezone()
            _night_failed(catalog, hooks, None, when, "error", exc.message, None)
        raise


def _run_night(
    catalog: Catalog,
    store: StateStore,
    hooks: Hooks,
    *,
    policy: str | None,
    trigger: str,
    scheduled_for: datetime | None,
    stop: StopRequest | None,
    show_progress: bool | None,
    notify: Callable[[str], None],
    rerun: Rerun,
    ledger: NightLedger | None,
) -> dict[str, Any]:
    history = History(store)
    for night in history.reap_stale():
        warn(f"night {night} of an earlier scheduler process was left running: marked interrupted")
    started = datetime.now().astimezone()
    carried = find_carried(history, catalog.name, rerun) if rerun.continues else None
    key = (scheduled_for or started).isoformat()
    shared = ledger.night(key) if ledger is not None else None
    if shared is not None and shared.ended:
        raise NightAlreadyRan(
            f"night {key} of {catalog.name!r} already ended {shared.state} on {shared.host}"
            " (the ledger on the primary)"
        )
    if shared is not None:
        carried = carried_from_ledger(shared)
    day = night_date(rerun, carried, scheduled_for or started)
    catalog = with_date(catalog, day)
    # deadlines count from the night's scheduled start (a resumed night: its first start)
    scheduled = scheduled_for or (carried.started_at if carried is not None else started)
    with ServerPool(catalog, secrets_dir(store)) as pool:
        pool.lock()
        readiness = _wait_until_ready(catalog, pool, stop, notify)
        if readiness is not None and not readiness.ready:
            label = NightLabel(
                catalog.name,
                str(catalog.path),
                policy or catalog.policy,
                trigger,
                scheduled_for.isoformat() if scheduled_for else None,
            )
            resumed = carried.night_id if carried is not None and shared is None else None
            return _not_ready(catalog, history, hooks, label, readiness, stop, resumed)
        try:
            plan = make_plan(
                catalog,
                pool,
                history,
                policy,
                base_time=started,
                scheduled_for=scheduled,
                select=chooser(rerun, carried),
            )
        except NothingLeft:
            if ledger is None or shared is None:
                raise
            # its host died after the last job ended, before it could end the night
            status = "ok" if all(s == "ok" for s in shared.jobs.values()) else "failed"
            ledger.finish(key, status)
            raise NightAlreadyRan(
                f"night {key} of {catalog.name!r}: every job had ended on {shared.host};"
                f" ended it {status} in the ledger"
            ) from None
        for message in plan.warnings:
            warn(message)
        label = NightLabel(
            catalog.name,
            str(catalog.path),
            plan.policy,
            trigger,
            scheduled_for.isoformat() if scheduled_for else None,
        )
        on_job = None
        if ledger is not None:
            ledger.begin(key, day)
            on_job = functools.partial(_tell_ledger, ledger, key)
        if shared is not None:
            ran = sum(1 for state in shared.jobs.values() if state in ENDED)
            note = (
                f"takes over the night from {shared.host} (ledger on the primary):"
                f" {plural(ran, 'job')} ended there"
            )
            night = history.start_night(label, plan.workers, plan.planned_jobs(), night_date=day)
            history.set_note(night, note)
            notify(f"night {night} of {catalog.name} ({day}): {note}")
        elif carried is not None:
            night = carried.night_id
            note = f"{rerun.mode} at {utcnow()}: {plural(len(plan.catalog.jobs), 'job')} ran again"
            history.resume_night(night, plan.planned_jobs(), note)
            notify(f"night {night} of {catalog.name} ({day}): {note}")
        else:
            night = history.start_night(label, plan.workers, plan.planned_jobs(), night_date=day)
        due = due_times(plan.catalog, scheduled)
        if plan.refusal is not None:
            if ledger is not None:
                ledger.finish(key, "failed")
            return _refuse(history, night, plan, pool, hooks, scheduled, due, readiness)
        bar = is_terminal() if show_progress is None else show_progress
        runner = NightRunner(
            plan,
            pool,
            history,
            night,
            scheduled_for=(scheduled_for or started).isoformat(),
            log_dir=log_dir(store),
            stop=stop,
            notify=notify,
            job_lines=not bar,
            hooks=hooks,
            due=due,
            night_date=day,
            carried=carried,
            on_job=on_job,
        )
        try:
            with progress(
                f"{catalog.name} night {night}", total=len(plan.catalog.jobs), force=bar
            ) as drawn:
                result = runner.run(drawn)
        except BaseException as exc:
            runner.abort()
            history.finish_night(night, "error", {}, note=f"{type(exc).__name__}: {exc}")
            _night_failed(
                catalog, hooks, night, scheduled, "error", f"{type(exc).__name__}: {exc}", None
            )
            raise
        status = (
            "interrupted"
            if result.stopped
            else ("ok" if all(o == "ok" for o in result.outcomes.values()) else "failed")
        )
        notes = [n for n in (note_of(history, night), *result.notes) if n]
        summary = night_summary(plan, result, pool)
        summary.update(_alert(catalog, hooks, night, scheduled, status, result, due, readiness))
        history.finish_night(night, status, summary, note="; ".join(notes) or None)
        if ledger is not None and status != "interrupted":  # interrupted: the standby's to end
            ledger.finish(key, status)
    prune_logs(log_dir(store) / catalog.name)
    document = history.night(night)
    assert document is not None
    return document


class NightAlreadyRan(GovernError):
    """The ledger on the primary says another host (or this one) ended this night."""


def carried_from_ledger(shared: LedgerNight) -> Carried:
    """What another host settled of a night, as a resumed night's earlier part: outcomes and
    completion times from the ledger (the rest of that part is in that host's history)."""
    ok = [job for job, state in shared.jobs.items() if state == "ok"]
    return Carried(
        night_id=0,
        date=shared.night_date,
        started_at=shared.started_at,
        outcomes={job: state for job, state in shared.jobs.items() if state in ENDED},
        finishes={job: shared.finishes[job] for job in ok if job in shared.finishes},
        durations={},
        attempts=dict(shared.attempts),
    )


def _tell_ledger(ledger: NightLedger, key: str, job: str, state: str, attempt: int) -> None:
    ledger.job(key, job, state, attempt)


def note_of(history: History, night: int) -> str | None:
    """The night's note as it stands (a resumed night keeps saying it was resumed)."""
    row = history.store.db.execute(
        "SELECT note FROM schedule_nights WHERE id = ?", (night,)
    ).fetchone()
    return None if row is None or row["note"] is None else str(row["note"])


def night_date(rerun: Rerun, carried: Carried | None, when: datetime) -> str:
    """The night's ``{date}``: ``--date``, else the resumed night's, else the day it starts
    (a cron night: the day of its fire time)."""
    if carried is not None and carried.date and rerun.date and rerun.date != carried.date:
        raise UsageError(
            f"--date {rerun.date}: night {carried.night_id} is for {carried.date}"
            " (a resumed night keeps its date)"
        )
    return rerun.date or (carried.date if carried and carried.date else when.date().isoformat())


def dry_run(
    catalog: Catalog, store: StateStore, *, policy: str | None = None, rerun: Rerun | None = None
) -> tuple[Plan, str, int | None]:
    """What ``run`` would do (same selection, same sizing), without the lock, without a record,
    without starting a job: the plan, the night's date, and the night it would go on with."""
    rerun = rerun or Rerun()
    history = History(store)
    started = datetime.now().astimezone()
    carried = find_carried(history, catalog.name, rerun) if rerun.continues else None
    day = night_date(rerun, carried, started)
    catalog = with_date(catalog, day)
    with ServerPool(catalog, secrets_dir(store)) as pool:
        plan = make_plan(
            catalog, pool, history, policy, base_time=started, select=chooser(rerun, carried)
        )
    return plan, day, carried.night_id if carried else None


def _refuse(
    history: History,
    night: int,
    plan: Plan,
    pool: ServerPool,
    hooks: Hooks,
    scheduled: datetime,
    due: Due,
    readiness: Readiness | None,
) -> dict[str, Any]:
    """A night that must not run (plan.refusal): recorded as failed, every job skipped with
    the reason, nothing started, on_failure fired. Loud: the reason is the night's note and
    a warning."""
    assert plan.refusal is not None
    reason = f"the night was refused: {plan.refusal}"
    names = [j.name for j in plan.catalog.jobs]
    history.jobs_skipped(night, [(name, reason) for name in names])
    result = NightResult({}, dict.fromkeys(names, "skipped"), {}, stopped=False)
    summary = night_summary(plan, result, pool)
    summary.update(
        _alert(
            plan.catalog, hooks, night, scheduled, "failed", result, due, readiness, reason=reason
        )
    )
    history.finish_night(night, "failed", summary, note=plan.refusal)
    warn(f"night {night} of {plan.catalog.name} refused: {plan.refusal}")
    document = history.night(night)
    assert document is not None
    return document


def _wait_until_ready(
    catalog: Catalog,
    pool: ServerPool,
    stop: StopRequest | None,
    notify: Callable[[str], None],
) -> Readiness | None:
    """[ready_when] on its server (default: the sizing server, else the first worker);
    None without one."""
    spec = catalog.ready_when
    if spec is None:
        return None
    server = spec.server or catalog.sizing.server
    conn = pool.connection_for(server)
    if conn is None:
        raise ServerError(f"ready_when: server {server or 'of the first worker'} cannot be reached")
    return wait_until_ready(
        catalog,
        spec,
        conn,
        stopped=(stop.is_set if stop is not None else lambda: False),
        say=lambda message: notify(f"{catalog.name}: {message}"),
    )


def _not_ready(
    catalog: Catalog,
    history: History,
    hooks: Hooks,
    label: NightLabel,
    readiness: Readiness,
    stop: StopRequest | None,
    resumed: int | None = None,
) -> dict[str, Any]:
    """The night ends before its jobs: ``failed`` (on_failure fires) or, stopped, ``interrupted``;
    returns its document. A night ``--resume``/``--only-failed`` would go on with (``resumed``)
    is left as it was, its note saying why, so that it can still be resumed."""
    waited = duration(readiness.waited_s, "clock")
    if stop is not None and stop.is_set():
        note = f"stopped while waiting for [ready_when] ({waited}, last poll {readiness.reason})"
        if resumed is not None:
            night = _note_on(history, resumed, note)
        else:
            night = history.record_unrun_night(label, "interrupted", note)
    else:
        note = (
            f"not ready: [ready_when] still false after {waited} ({readiness.polls} polls,"
            f" timeout {catalog.ready_when.timeout if catalog.ready_when else 0:g}s);"
            f" last poll {readiness.reason}"
        )
        if resumed is not None:
            night = _note_on(history, resumed, note)
        else:
            night = history.record_unrun_night(label, "failed", note)
        scheduled = datetime.fromisoformat(label.scheduled_for) if label.scheduled_for else None
        _night_failed(catalog, hooks, night, scheduled, "failed", note, None)
        hooks.wait()
    document = history.night(night)
    assert document is not None
    return document


def _note_on(history: History, night: int, note: str) -> int:
    """Add ``note`` to an earlier night's note (a rerun of it that did not start)."""
    history.set_note(night, "; ".join(n for n in (note_of(history, night), note) if n))
    return night


def _night_failed(
    catalog: Catalog,
    hooks: Hooks,
    night: int | None,
    scheduled: datetime | None,
    status: str,
    reason: str,
    outcomes: Counter[str] | None,
) -> None:
    hooks.fire(
        make_event(
            "failure",
            catalog,
            scope="night",
            reason=reason,
            night_id=night,
            scheduled_for=scheduled.isoformat() if scheduled else None,
            status=status,
            outcomes=outcomes,
        )
    )
    if status == "error":
        hooks.wait()


def _alert(
    catalog: Catalog,
    hooks: Hooks,
    night: int,
    scheduled: datetime,
    status: str,
    result: NightResult,
    due: Due,
    readiness: Readiness | None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A failed night's own on_failure event (``reason``: why, else its outcome counts), every
    delivery waited for, and what the night's summary records of deadlines, alerts and
    readiness (docs/json.md, ``summary``)."""
    outcomes = Counter(result.outcomes.values())
    if status == "failed":
        bad = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()) if o != "ok")
        why = f"night {night}: {reason or bad}"
        _night_failed(catalog, hooks, night, scheduled, status, why, outcomes)
    hooks.wait()
    misses = []
    for miss in result.deadline_misses:
        job = miss["job"]
        misses.append(
            {
                **miss,
                "outcome": result.outcomes.get(str(job)) if job else None,
                "finish_s": (
                    round(result.finishes[str(job)], 3)
                    if job and str(job) in result.finishes
                    else (round(result.ended_at, 3) if not job else None)
                ),
            }
        )
    return {
        "deadline": due.night.isoformat(timespec="seconds") if due.night else None,
        "deadline_misses": misses,
        "events": hooks.fired,
        "ready": readiness.to_json() if readiness is not None else None,
    }


def night_summary(plan: Plan, result: NightResult, pool: ServerPool) -> dict[str, Any]:
    """What the night is judged by, stored with it (docs/json.md, ``summary``)."""
    weights = {j.name: j.weight for j in plan.catalog.jobs}
    ends = [*list(result.finishes.values()), result.ended_at]
    total = len({j.name for j in plan.catalog.jobs} | set(result.outcomes))  # resumed: all
    metrics = night_metrics(result.finishes, total, weights, makespan=max(ends))
    pairs = {}
    for name, estimate in plan.estimates.items():
        predicted = plan.predicted_s(name)
        if (
            estimate.seconds is not None
            and predicted is not None
            and result.outcomes.get(name) == "ok"
            and name in result.durations
        ):
            pairs[name] = (predicted, result.durations[name])
    return {
        **metrics.to_json(),
        "outcomes": dict(Counter(result.outcomes.values())),
        "estimate_error": estimate_error(pairs).to_json(),
        "lag_waits_s": {
            w.spec.name: round(w.guard.held_seconds if w.guard else 0.0, 3) for w in pool.workers
        },
        "warnings": plan.warnings,
        "template_keys": plan.template_keys,
        "refused": plan.refusal is not None,
    }
