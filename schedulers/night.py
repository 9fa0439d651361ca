"""One night from start to end, for ``govern schedule run`` and each fire of ``serve``:
lock, plan, record, run, summarise.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from govern.errors import GovernError, ServerError
from govern.output import info, is_terminal, warn
from govern.progress import progress
from govern.schedulers.catalog import Catalog
from govern.schedulers.deadlines import Due, due_times
from govern.schedulers.estimates import estimate_error
from govern.schedulers.history import History, NightLabel
from govern.schedulers.hooks import Hooks, make_event
from govern.schedulers.metrics import night_metrics
from govern.schedulers.plan import Plan, make_plan
from govern.schedulers.readiness import Readiness, wait_until_ready
from govern.schedulers.runner import NightResult, NightRunner, StopRequest
from govern.schedulers.workers import LockHeld, ServerPool
from govern.state import StateStore
from govern.units import duration

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
) -> dict[str, Any]:
    """Run every job of ``catalog`` now; returns the night's ``govern.schedule.night`` document.

    Raises LockHeld (exit 3) when another night of this catalog runs, ServerError when no
    worker can be reached, ConfigError when the sizing query is wrong: all before any job
    (each but LockHeld fires on_failure). A ``[ready_when]`` that stays false until its
    timeout ends the night ``failed`` before any job, and fires on_failure.
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
        )
    except GovernError as exc:
        if not isinstance(exc, LockHeld) and not hooks.fired:  # failed before any job
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
) -> dict[str, Any]:
    history = History(store)
    for night in history.reap_stale():
        warn(f"night {night} of an earlier scheduler process was left running: marked interrupted")
    started = datetime.now().astimezone()
    scheduled = scheduled_for or started
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
            return _not_ready(catalog, history, hooks, label, readiness, stop)
        plan = make_plan(catalog, pool, history, policy, base_time=started, scheduled_for=scheduled)
        for message in plan.warnings:
            warn(message)
        label = NightLabel(
            catalog.name,
            str(catalog.path),
            plan.policy,
            trigger,
            scheduled_for.isoformat() if scheduled_for else None,
        )
        night = history.start_night(label, plan.workers, plan.planned_jobs())
        bar = is_terminal() if show_progress is None else show_progress
        due = due_times(plan.catalog, scheduled)
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
        summary = night_summary(plan, result, pool)
        summary.update(_alert(catalog, hooks, night, scheduled, status, result, due, readiness))
        history.finish_night(night, status, summary)
    prune_logs(log_dir(store) / catalog.name)
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
) -> dict[str, Any]:
    """The night ends before its jobs: ``failed`` (on_failure fires) or, stopped, ``interrupted``;
    returns its document."""
    waited = duration(readiness.waited_s, "clock")
    if stop is not None and stop.is_set():
        note = f"stopped while waiting for [ready_when] ({waited}, last poll {readiness.reason})"
        night = history.record_unrun_night(label, "interrupted", note)
    else:
        note = (
            f"not ready: [ready_when] still false after {waited} ({readiness.polls} polls,"
            f" timeout {catalog.ready_when.timeout if catalog.ready_when else 0:g}s);"
            f" last poll {readiness.reason}"
        )
        night = history.record_unrun_night(label, "failed", note)
        scheduled = datetime.fromisoformat(label.scheduled_for) if label.scheduled_for else None
        _night_failed(catalog, hooks, night, scheduled, "failed", note, None)
        hooks.wait()
    document = history.night(night)
    assert document is not None
    return document


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
) -> dict[str, Any]:
    """A failed night's own on_failure event, every delivery waited for, and what the
    night's summary records of deadlines, alerts and readiness (docs/json.md, ``summary``)."""
    outcomes = Counter(result.outcomes.values())
    if status == "failed":
        bad = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()) if o != "ok")
        _night_failed(catalog, hooks, night, scheduled, status, f"night {night}: {bad}", outcomes)
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
    metrics = night_metrics(result.finishes, len(plan.catalog.jobs), weights, makespan=max(ends))
    pairs = [
        (estimate.seconds, result.durations[name])
        for name, estimate in plan.estimates.items()
        if estimate.seconds is not None and result.outcomes.get(name) == "ok"
    ]
    return {
        **metrics.to_json(),
        "outcomes": dict(Counter(result.outcomes.values())),
        "estimate_error": estimate_error(pairs).to_json(),
        "lag_waits_s": {
            w.spec.name: round(w.guard.held_seconds if w.guard else 0.0, 3) for w in pool.workers
        },
        "warnings": plan.warnings,
    }
