"""The plan of a night: sizes, learned estimates, lanes, and the predicted timeline.

``govern schedule plan`` prints it; ``run`` records it next to what happened, so
the history shows planned against actual for every job.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from govern.errors import ServerError
from govern.privileges import account_warnings, read_grants
from govern.schedulers.catalog import Catalog
from govern.schedulers.contention import NONE, Contention
from govern.schedulers.deadlines import Due, due_times
from govern.schedulers.estimates import Estimate, Estimator
from govern.schedulers.history import History, PlannedJob
from govern.schedulers.key_floor import KEY_NIGHTS, floor_refusal, template_keys
from govern.schedulers.policies import Lane, Task, make_lanes
from govern.schedulers.rerun import with_date
from govern.schedulers.simulate import Placement, Timeline, simulate
from govern.schedulers.sizing import Sizes, measure_sizes
from govern.schedulers.sizing_server import SizingRead, choose_sizing_server, needs_server
from govern.schedulers.workers import ServerPool
from govern.units import plural

PLAN_SCHEMA = "govern.schedule.plan"
#: Predicted run time of a job with no estimate when nothing else is known at all.
DEFAULT_UNKNOWN_SECONDS = 60.0


@dataclasses.dataclass
class Plan:
    catalog: Catalog
    policy: str
    lanes: list[Lane]
    tasks: list[Task]
    sizes: Sizes
    estimates: dict[str, Estimate]
    timeline: Timeline
    #: the run time assumed for jobs with no estimate (the longest known one)
    unknown_seconds: float
    workers: list[dict[str, Any]]
    warnings: list[str]
    base_time: datetime
    #: how much jobs slow beside others, measured from history (plan and simulate use it)
    contention: Contention = NONE
    #: (job, worker) -> the estimate on that worker, where it rests on that worker's runs
    on_worker: dict[tuple[str, str], Estimate] = dataclasses.field(default_factory=dict)
    #: the deadlines of this night as times (none without deadlines in the catalog)
    due: Due = dataclasses.field(default_factory=lambda: Due(None, {}))
    #: jobs each [each.NAME] template made tonight (the key-count floor's figure)
    template_keys: dict[str, int] = dataclasses.field(default_factory=dict)
    #: why the night must not run (no server fit for the sizing read, too few keys)
    refusal: str | None = None

    def estimate_on(self, name: str, worker: str | None) -> Estimate:
        return self.on_worker.get((name, worker or ""), self.estimates[name])

    def worker_seconds(self) -> dict[tuple[str, str], float]:
        """(job, worker) -> alone seconds there, for the simulator."""
        return {k: e.seconds for k, e in self.on_worker.items() if e.seconds is not None}

    def predicted_s(self, name: str) -> float | None:
        """The job's predicted run time tonight: alone on its planned worker, times the
        contention the plan expects beside it. None if it is not planned."""
        place = self._placements.get(name)
        return None if place is None else place.finish - place.start

    @functools.cached_property
    def _placements(self) -> dict[str, Placement]:
        return {p.name: p for p in self.timeline.placements}

    def planned_jobs(self) -> list[PlannedJob]:
        out = []
        for job in self.catalog.jobs:
            place = self._placements.get(job.name)
            estimate = self.estimate_on(job.name, place.lane.worker if place else None)
            out.append(
                PlannedJob(
                    name=job.name,
                    position=job.order,
                    key=job.key,
                    weight=job.weight,
                    rows=self.sizes.rows.get(job.name),
                    estimate_s=place.finish - place.start if place else estimate.seconds,
                    estimate_method=estimate.method,
                    planned_lane=place.lane.label if place else None,
                    planned_start_s=place.start if place else None,
                    planned_finish_s=place.finish if place else None,
                )
            )
        return out

    def to_json(self) -> dict[str, Any]:
        jobs = []
        for place in self.timeline.placements:
            job = self.catalog.job(place.name)
            estimate = self.estimate_on(job.name, place.lane.worker)
            jobs.append(
                {
                    "name": job.name,
                    "worker": place.lane.worker,
                    "lane": place.lane.label,
                    "rows": self.sizes.rows.get(job.name),
                    "estimate_s": _r(estimate.seconds),
                    "estimate_method": estimate.method,
                    "estimate_samples": estimate.samples,
                    "estimate_worker": estimate.worker,
                    "predicted_s": _r(place.finish - place.start),
                    "weight": job.weight,
                    "depends_on": list(job.depends_on),
                    "predicted_start_s": _r(place.start),
                    "predicted_finish_s": _r(place.finish),
                    "predicted_start_at": (
                        self.base_time + timedelta(seconds=place.start)
                    ).isoformat(timespec="seconds"),
                    "predicted_finish_at": (
                        self.base_time + timedelta(seconds=place.finish)
                    ).isoformat(timespec="seconds"),
                    "deadline_at": _at(self.due.jobs.get(job.name)),
                }
            )
        return {
            "schema": PLAN_SCHEMA,
            "schema_version": 1,
            "schedule": self.catalog.name,
            "catalog": str(self.catalog.path),
            "policy": self.policy,
            "base_time": self.base_time.isoformat(timespec="seconds"),
            "deadline_at": _at(self.due.night),
            "workers": self.workers,
            "lanes": [
                {"lane": lane.label, "worker": lane.worker, "end": lane.end} for lane in self.lanes
            ],
            "sizes": self.sizes.to_json(),
            "unknown_estimate_s": _r(self.unknown_seconds),
            "contention": self.contention.to_json(),
            "jobs": jobs,
            "skipped": [{"name": n, "reason": r} for n, r in self.timeline.skipped.items()],
            "summary": self.timeline.metrics.to_json(),
            "warnings": self.warnings,
            "template_keys": self.template_keys,
            "refusal": self.refusal,
        }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _at(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat(timespec="seconds")


def make_plan(
    catalog: Catalog,
    pool: ServerPool,
    history: History,
    policy: str | None = None,
    base_time: datetime | None = None,
    scheduled_for: datetime | None = None,
    select: Callable[[Catalog], tuple[Catalog, list[str]]] | None = None,
) -> Plan:
    """Size every job, estimate it from history, and simulate the night under ``policy``.

    Deadlines count from ``scheduled_for`` (the cron fire time; default ``base_time``).
    ``select`` narrows the sized catalog (templates expanded) to the jobs this run takes
    (``--job``, ``--resume``: govern/schedulers/rerun.py)."""
    base_time = base_time or datetime.now().astimezone()
    catalog = with_date(catalog, base_time.date().isoformat())  # run fills it before: no-op
    usable = pool.usable()
    if not usable:
        reasons = "; ".join(f"{w.spec.name}: {w.error}" for w in pool.workers)
        raise ServerError(f"no worker of {catalog.name!r} can be reached ({reasons})")
    warnings = [
        f"worker {w.spec.name} is left out: {w.error}" for w in pool.workers if not w.usable
    ]
    for worker in usable:
        if worker.info is not None and worker.info.is_replica is None:
            grant = " or ".join(worker.info.replica_status_privileges)
            warnings.append(
                f"worker {worker.spec.name}: cannot read replica status (needs {grant}): "
                "the lag guard cannot see it and its sql jobs run read-only"
            )
    for worker in usable:
        if worker.conn is not None and worker.info is not None:
            for message in account_warnings(worker.info, read_grants(worker.conn)):
                warnings.append(f"worker {worker.spec.name}: {message}")
    pool.refresh_lag()
    lanes = make_lanes([(w.spec.name, w.spec.concurrency, w.spec.end) for w in usable])
    original = catalog
    refusal = None
    read = SizingRead(catalog.sizing.server or usable[0].spec.name, None, [])
    if needs_server(catalog):
        read = choose_sizing_server(catalog, pool)
        warnings.extend(read.notes)
        refusal = read.refusal
    server = read.server or catalog.sizing.server or usable[0].spec.name
    if refusal is None:
        catalog, sizes = measure_sizes(catalog, read.conn, server)
        warnings.extend(sizes.warnings)
    else:
        catalog, sizes = measure_sizes(catalog, None, server)
    keys = template_keys(original, catalog)
    if refusal is None and keys:
        refusal = floor_refusal(
            keys, history.recent_template_keys(catalog.name, KEY_NIGHTS), catalog.sizing.key_floor
        )
    if select is not None:
        catalog, narrowed = select(catalog)
        warnings.extend(narrowed)
    estimator = Estimator(
        history.samples(catalog.name, catalog.history_window), catalog.rows_per_second
    )
    estimates = {j.name: estimator.estimate(j.name, sizes.rows[j.name]) for j in catalog.jobs}
    on_worker = {}
    for job in catalog.jobs:
        for worker in usable:
            here = estimator.estimate(job.name, sizes.rows[job.name], worker.spec.name)
            if here.worker is not None:
                on_worker[(job.name, worker.spec.name)] = here
    tasks = [
        Task(j.name, j.order, estimates[j.name].seconds, j.weight, j.depends_on, j.workers, j.pool)
        for j in catalog.jobs
    ]
    known = [e.seconds for e in estimates.values() if e.seconds is not None]
    unknown_seconds = max(known) if known else DEFAULT_UNKNOWN_SECONDS
    missing = [name for name, e in estimates.items() if e.seconds is None]
    if missing:
        warnings.append(
            f"{plural(len(missing), 'job')} {'has' if len(missing) == 1 else 'have'} no estimate"
            f" (no size, no history): {'it goes' if len(missing) == 1 else 'they go'} to the long"
            f" side and {'is' if len(missing) == 1 else 'are'} predicted at {unknown_seconds:.0f}s"
        )
    durations = {t.name: unknown_seconds if t.estimate is None else t.estimate for t in tasks}
    chosen = policy or catalog.policy
    timeline = simulate(
        chosen,
        tasks,
        lanes,
        durations,
        on_worker={k: e.seconds for k, e in on_worker.items() if e.seconds is not None},
        contention=estimator.contention,
        pools=catalog.pools,
    )
    due = due_times(catalog, scheduled_for or base_time)
    warnings.extend(
        due.predicted_misses(base_time, {p.name: p.finish for p in timeline.placements})
    )
    return Plan(
        catalog=catalog,
        policy=chosen,
        lanes=lanes,
        tasks=tasks,
        sizes=sizes,
        estimates=estimates,
        timeline=timeline,
        unknown_seconds=unknown_seconds,
        workers=[w.describe() for w in pool.workers],
        warnings=warnings,
        base_time=base_time or datetime.now().astimezone(),
        contention=estimator.contention,
        on_worker=on_worker,
        due=due,
        template_keys=keys,
        refusal=refusal,
    )
