"""A night that is not a whole fresh one: ``--date``, ``--job``, ``--resume``, ``--only-failed``.

``--date`` fills ``{date}`` (YYYY-MM-DD) in the sizing query and in jobs' commands, and jobs get
it as ``$GOVERN_DATE``: a backfill sizes and runs that day's work. A night records its date, so
resuming it runs the same day's work, whatever day it is now.

``--resume`` and ``--only-failed`` go on with the newest night of the catalog in the same
record (same night id; attempts numbered on): jobs that ended ``ok`` never run again. ``--resume``
takes an interrupted night (or one whose scheduler died) and runs what it left: jobs not started,
interrupted, or skipped for the stop; failed jobs stay failed, and so do the jobs skipped for
them. ``--only-failed`` takes a night that ended ``failed`` or ``interrupted`` and runs every job
that did not end ``ok``. ``--job GLOB`` narrows any of these; a dependency outside the selection
is taken as done (said once, as a warning).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import socket
from collections.abc import Callable, Iterable
from datetime import date, datetime

from govern.errors import UsageError
from govern.schedulers.catalog import Catalog, JobSpec
from govern.schedulers.history import History, process_token
from govern.units import plural

DATE_PLACEHOLDER = "{date}"
#: What narrows tonight's expanded catalog: the catalog kept, and warnings.
Selector = Callable[[Catalog], tuple[Catalog, list[str]]]
#: Outcomes a job keeps when its night is resumed: it ran to an end.
ENDED = ("ok", "failed", "timeout")


class NothingLeft(UsageError):
    """Every job of the night this run would go on with has ended."""


@dataclasses.dataclass(frozen=True)
class Rerun:
    """How ``govern schedule run`` narrows a night; the default is the whole night, today."""

    date: str | None = None
    jobs: tuple[str, ...] = ()  # --job globs
    resume: bool = False
    only_failed: bool = False

    @property
    def continues(self) -> bool:
        return self.resume or self.only_failed

    @property
    def mode(self) -> str:
        return "--only-failed" if self.only_failed else "--resume"


def parse_date(text: str) -> str:
    """``YYYY-MM-DD`` as given, checked (it goes into SQL text: nothing else may pass)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise UsageError(f"--date {text}: expected YYYY-MM-DD")
    try:
        date.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"--date {text}: {exc}") from None
    return text


def with_date(catalog: Catalog, day: str) -> Catalog:
    """``{date}`` filled in the sizing query and in every job's and template's command."""

    def dated(job: JobSpec) -> JobSpec:
        if job.command is None:
            return job
        return dataclasses.replace(
            job, command=tuple(p.replace(DATE_PLACEHOLDER, day) for p in job.command)
        )

    query = catalog.sizing.query
    sizing = catalog.sizing
    if query is not None:
        sizing = dataclasses.replace(sizing, query=query.replace(DATE_PLACEHOLDER, day))
    return dataclasses.replace(
        catalog,
        sizing=sizing,
        jobs=tuple(dated(j) for j in catalog.jobs),
        templates=tuple(dated(t) for t in catalog.templates),
    )


@dataclasses.dataclass
class Carried:
    """What the earlier runs of a night settled, for the run that goes on with it."""

    night_id: int
    date: str | None
    started_at: datetime
    outcomes: dict[str, str]  # every job of the record -> its outcome
    finishes: dict[str, float]  # ok jobs -> finish offset
    durations: dict[str, float]  # ok jobs -> run time
    attempts: dict[str, int]  # job -> attempts made so far

    def offset(self, now: datetime) -> float:
        """Seconds from the night's first start: a resumed night's clock goes on from there."""
        return max((now - self.started_at).total_seconds(), 0.0)


def find_carried(history: History, schedule: str, rerun: Rerun) -> Carried:
    """The newest night of ``schedule`` that ran, if ``rerun`` may go on with it."""
    row = history.store.db.execute(
        "SELECT id, status, pid, pid_start, host, night_date, started_at FROM schedule_nights"
        " WHERE schedule = ? AND status IN ('running', 'ok', 'failed', 'interrupted')"
        " ORDER BY id DESC LIMIT 1",
        (schedule,),
    ).fetchone()
    if row is None:
        raise UsageError(f"{rerun.mode}: no night of {schedule!r} in the state store")
    night, status = int(row["id"]), str(row["status"])
    if status == "running":
        alive = row["pid"] is not None and process_token(int(row["pid"])) == row["pid_start"]
        if alive or row["host"] != socket.gethostname():
            where = f"pid {row['pid']} on {row['host']}"
            raise UsageError(
                f"{rerun.mode}: night {night} of {schedule!r} is still running ({where})"
            )
        status = "interrupted"  # its scheduler died: the next run reaps it
    if status == "ok":
        raise UsageError(f"{rerun.mode}: night {night} of {schedule!r} ended ok: nothing to run")
    if rerun.resume and status != "interrupted":
        raise UsageError(
            f"--resume: night {night} of {schedule!r} was not interrupted (it ended {status}):"
            " --only-failed runs its failed jobs again"
        )
    jobs = history.settled_jobs(night)
    return Carried(
        night_id=night,
        date=row["night_date"],
        started_at=datetime.fromisoformat(str(row["started_at"])),
        outcomes={n: str(j["outcome"]) for n, j in jobs.items()},
        finishes={
            n: float(j["finish_s"])
            for n, j in jobs.items()
            if j["outcome"] == "ok" and j["finish_s"] is not None
        },
        durations={
            n: float(j["duration_s"])
            for n, j in jobs.items()
            if j["outcome"] == "ok" and j["duration_s"] is not None
        },
        attempts=history.attempt_counts(night),
    )


def left_to_run(catalog: Catalog, carried: Carried, only_failed: bool) -> set[str]:
    """The jobs of tonight's catalog the earlier runs did not settle.

    ``--resume`` keeps failures: a failed job and every job depending on it (directly or
    not) stay as they are. Iterative: a chain of thousands of links costs no recursion."""
    outcomes = carried.outcomes
    if only_failed:
        return {j.name for j in catalog.jobs if outcomes.get(j.name) != "ok"}
    failed = {n for n, o in outcomes.items() if o in ENDED and o != "ok"}
    left = {j.name for j in catalog.jobs if outcomes.get(j.name) not in ENDED}
    changed = True
    while changed:
        changed = False
        for job in catalog.jobs:
            if job.name in left and any(d in failed for d in job.depends_on):
                left.discard(job.name)
                failed.add(job.name)
                changed = True
    return left


def matching(names: Iterable[str], globs: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)}


def narrow(catalog: Catalog, keep: set[str], carried: Carried | None) -> tuple[Catalog, list[str]]:
    """The catalog with only ``keep``; a dependency on a job left out is taken as done.

    Returns a warning when such a dependency was not settled ``ok`` by an earlier run."""
    jobs: list[JobSpec] = []
    assumed: set[str] = set()
    done = set(carried.finishes) if carried else set()
    for job in catalog.jobs:
        if job.name not in keep:
            continue
        outside = [d for d in job.depends_on if d not in keep]
        assumed.update(d for d in outside if d not in done)
        depends_on = tuple(d for d in job.depends_on if d in keep)
        jobs.append(dataclasses.replace(job, order=len(jobs), depends_on=depends_on))
    warnings = []
    if assumed:
        warnings.append(
            f"{plural(len(assumed), 'dependency', 'dependencies')} outside --job taken as done:"
            f" {', '.join(sorted(assumed)[:5])}{' …' if len(assumed) > 5 else ''}"
        )
    return dataclasses.replace(catalog, jobs=tuple(jobs)), warnings


def chooser(rerun: Rerun, carried: Carried | None) -> Selector:
    """The ``select`` hook of :func:`make_plan`: the jobs this run takes, once templates are
    expanded (tonight's keys), with the reasons it narrowed them."""

    def select(catalog: Catalog) -> tuple[Catalog, list[str]]:
        keep = {j.name for j in catalog.jobs}
        if carried is not None:
            keep = left_to_run(catalog, carried, rerun.only_failed)
        if rerun.jobs:
            chosen = matching((j.name for j in catalog.jobs), rerun.jobs)
            if not chosen:
                raise UsageError(
                    f"--job {' '.join(rerun.jobs)}: no job of tonight's catalog matches"
                )
            keep &= chosen
        if not keep:
            which = f"night {carried.night_id}" if carried else "tonight's catalog"
            raise NothingLeft(f"{rerun.mode}: nothing left to run in {which}")
        return narrow(catalog, keep, carried)

    return select
