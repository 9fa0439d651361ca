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

from govern.output import info, is_terminal, warn
from govern.progress import progress
from govern.schedulers.catalog import Catalog
from govern.schedulers.estimates import estimate_error
from govern.schedulers.history import History, NightLabel
from govern.schedulers.metrics import night_metrics
from govern.schedulers.plan import Plan, make_plan
from govern.schedulers.runner import NightResult, NightRunner, StopRequest
from govern.schedulers.workers import ServerPool
from govern.state import StateStore

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
    worker can be reached, ConfigError when the sizing query is wrong: all before any job.
    """
    history = History(store)
    for night in history.reap_stale():
        warn(f"night {night} of an earlier scheduler process was left running: marked interrupted")
    started = datetime.now().astimezone()
    with ServerPool(catalog, secrets_dir(store)) as pool:
        pool.lock()
        plan = make_plan(catalog, pool, history, policy, base_time=started)
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
        )
        try:
            with progress(
                f"{catalog.name} night {night}", total=len(plan.catalog.jobs), force=bar
            ) as drawn:
                result = runner.run(drawn)
        except BaseException as exc:
            runner.abort()
            history.finish_night(night, "error", {}, note=f"{type(exc).__name__}: {exc}")
            raise
        status = (
            "interrupted"
            if result.stopped
            else ("ok" if all(o == "ok" for o in result.outcomes.values()) else "failed")
        )
        history.finish_night(night, status, night_summary(plan, result, pool))
    prune_logs(log_dir(store) / catalog.name)
    document = history.night(night)
    assert document is not None
    return document


def night_summary(plan: Plan, result: NightResult, pool: ServerPool) -> dict[str, Any]:
    """What the night is judged by, stored with it (docs/json.md, ``summary``)."""
    weights = {j.name: j.weight for j in plan.catalog.jobs}
    ends = [*list(result.finishes.values()), result.ended_at]
    metrics = night_metrics(result.finishes, len(plan.catalog.jobs), weights, makespan=max(ends))
    pairs = {}
    for name, estimate in plan.estimates.items():
        predicted = plan.predicted_s(name)
        if (
            estimate.seconds is not None
            and predicted is not None
            and result.outcomes.get(name) == "ok"
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
    }
