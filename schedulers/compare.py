"""``govern schedule simulate``: replay every policy on one night's durations and compare.

Recorded durations come from a night in the history: the policies order jobs by
the estimates recorded that night (what the scheduler knew then) while the clock
advances by what actually happened. Estimated durations come from a fresh plan.

Both are replayed with the contention measured from the history: a recorded run is
first divided by the slowdown of the others that ran beside it that night, then each
policy's timeline slows jobs down by the others beside them in *its* order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from govern.schedulers.catalog import POLICIES, Catalog
from govern.schedulers.contention import NONE, Contention, overlaps
from govern.schedulers.policies import Lane, Task, make_lanes
from govern.schedulers.simulate import makespan_lower_bound, simulate

SIMULATE_SCHEMA = "govern.schedule.simulate"


def catalog_lanes(catalog: Catalog, workers: int | None) -> tuple[list[Lane], bool]:
    """The catalog's lanes, or ``workers`` identical one-slot workers (restrictions dropped)."""
    if workers:
        return make_lanes([(f"w{i + 1}", 1, None) for i in range(workers)]), True
    return make_lanes([(w.name, w.concurrency, w.end) for w in catalog.workers]), False


def recorded_inputs(
    catalog: Catalog, night: dict[str, Any], contention: Contention = NONE
) -> tuple[list[Task], dict[str, float], list[str]]:
    """Tasks and durations (alone) from a recorded night; jobs without a run time are
    left out (counted)."""
    notes: list[str] = []
    ran = {j["name"]: j for j in night["jobs"] if j["actual_s"] is not None}
    left_out = [j["name"] for j in night["jobs"] if j["actual_s"] is None]
    if left_out:
        notes.append(f"{len(left_out)} jobs of night {night['id']} never ran and are left out")
    expanded, _ = catalog.expand([j["key"] for j in night["jobs"]])  # template jobs too
    catalog_jobs = {j.name: j for j in expanded.jobs}
    gone = [name for name in ran if name not in catalog_jobs]
    if gone:
        notes.append(
            f"{len(gone)} jobs of night {night['id']} are no longer in the catalog: replayed without dependencies"
        )
    tasks = []
    for name, job in ran.items():
        spec = catalog_jobs.get(name)
        tasks.append(
            Task(
                name=name,
                order=job["position"],
                estimate=job["estimate_s"],
                weight=job["weight"],
                depends_on=tuple(d for d in spec.depends_on if d in ran) if spec else (),
                workers=spec.workers if spec else None,
                pool=spec.pool if spec else None,
            )
        )
    attempts = [
        (job["name"], float(a["start_s"]), float(a["finish_s"]))
        for job in night["jobs"]
        for a in job["attempts"]
        if a["start_s"] is not None and a["finish_s"] is not None
    ]
    others = overlaps([(start, finish) for _, start, finish in attempts])
    beside = {name: k for (name, _, _), k in zip(attempts, others, strict=True)}  # last wins
    durations = {
        name: float(job["actual_s"]) / contention.factor(beside.get(name, 0.0))
        for name, job in ran.items()
    }
    return tasks, durations, notes


def compare_policies(
    catalog: Catalog,
    tasks: Sequence[Task],
    durations: dict[str, float],
    lanes: Sequence[Lane],
    *,
    source: str,
    night: dict[str, Any] | None = None,
    policies: Sequence[str] = POLICIES,
    notes: Sequence[str] = (),
    uniform: bool = False,
    contention: Contention = NONE,
    on_worker: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, Any]:
    """The ``govern.schedule.simulate`` document (docs/json.md)."""
    if uniform:
        tasks = [
            Task(t.name, t.order, t.estimate, t.weight, t.depends_on, None, t.pool) for t in tasks
        ]
    rows = []
    for policy in policies:
        timeline = simulate(
            policy,
            tasks,
            lanes,
            durations,
            on_worker=on_worker,
            contention=contention,
            pools=catalog.pools,
        )
        rows.append(
            {
                "policy": policy,
                **timeline.metrics.to_json(),
                "skipped": len(timeline.skipped),
            }
        )
    recorded = None
    if night is not None and night.get("summary"):
        recorded = {"policy": night["policy"], **night["summary"]}
    return {
        "schema": SIMULATE_SCHEMA,
        "schema_version": 1,
        "schedule": catalog.name,
        "catalog": str(catalog.path),
        "durations": source,
        "night_id": night["id"] if night is not None else None,
        "jobs": len(tasks),
        "lanes": len(lanes),
        "workers": sorted({lane.worker for lane in lanes}),
        "makespan_lower_bound_s": round(
            makespan_lower_bound(list(durations.values()), len(lanes)), 3
        ),
        "contention": contention.to_json(),
        "policies": rows,
        "recorded": recorded,
        "notes": list(notes),
    }
