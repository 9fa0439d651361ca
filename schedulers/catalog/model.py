"""What a summary catalog holds: workers, jobs and templates, sizing, schedule, lag guard.

Plain frozen data, read from the catalog file by :mod:`govern.schedulers.catalog.load`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from govern.connection import ConnectionSettings, resolve_settings

if TYPE_CHECKING:
    from govern.schedulers.catalog.deadline import Deadline
    from govern.throttle.spec import ThrottleSpec

#: The catalog's [hooks.NAME] tables: what may wake a DBA (docs/schedule.md, "Hooks").
HOOK_EVENTS = ("on_failure", "on_deadline_miss", "on_missed_fire")
POLICIES = ("fifo", "sjf", "ljf", "wspt", "two-ended")
WRAP_MODES = ("auto", "global", "threshold", "session")
ENDS = ("short", "long")
#: A job or worker name ends up in file names, environment values and `govern run --name`.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
CONNECTION_KEYS = ("host", "port", "user", "socket", "database", "dsn", "defaults_file")
_JOB_SETTINGS = (
    "timeout",
    "retries",
    "retry_delay",
    "wrap",
    "wrap_mode",
    "opts_out",
    "weight",
    "deadline",
    "pool",
)
#: The keys each table of a catalog may have (the reader names any other with a suggestion).
KEYS: dict[str, tuple[str, ...]] = {
    "": (
        "name",
        "policy",
        "kill_grace",
        "defaults",
        "sizing",
        "estimate",
        "schedule",
        "lag_guard",
        "throttle",
        "primary",
        "workers",
        "jobs",
        "each",
        "deadline",
        "pools",
        "ready_when",
        "hooks",
    ),
    "defaults": _JOB_SETTINGS,
    "sizing": ("query", "server", "fallback", "max_lag", "key_floor"),
    "estimate": ("rows_per_second", "history"),
    "schedule": ("cron", "timezone", "misfire_grace", "coalesce", "shutdown_grace", "lease"),
    "lag_guard": ("max_lag", "heartbeat_table", "heartbeat_utc", "check_interval", "max_wait"),
    "primary": CONNECTION_KEYS,
    "worker": (*CONNECTION_KEYS, "concurrency", "end"),
    "job": (
        "sql",
        "command",
        "key",
        "rows",
        "rows_from_table",
        "depends_on",
        "workers",
        *_JOB_SETTINGS,
    ),
    "each": ("sql", "command", "depends_on", "workers", *_JOB_SETTINGS),
    "ready_when": ("query", "server", "timeout", "interval"),
    "hooks": ("timeout", *HOOK_EVENTS),
    "hook": ("command", "webhook", "mail"),
}
#: What a template's command or sql path says where the key goes.
KEY_PLACEHOLDER = "{key}"


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """A server that runs jobs (usually a replica), with how many jobs it runs at once."""

    name: str
    connection: Mapping[str, Any]
    concurrency: int
    end: str | None  # two-ended: which end of the queue this worker's slots take
    line: int

    def settings(self) -> ConnectionSettings:
        return resolve_settings(**self.connection)


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """One summary build: what runs, how big it is, what it waits for, how it may fail."""

    name: str
    order: int  # position in the catalog: the FIFO order
    sql: Path | None
    command: tuple[str, ...] | None
    key: str  # matched against the sizing query's first column
    rows: int | None  # a fixed size, when given
    rows_from_table: str | None  # ``schema.table`` whose estimated row count stands in
    depends_on: tuple[str, ...]
    workers: tuple[str, ...] | None  # None: any worker
    weight: float
    timeout: float | None
    retries: int
    retry_delay: float
    wrap: bool
    wrap_mode: str
    #: (with wrap) the job passes $GOVERN_INIT_COMMAND to its connections: session mode
    opts_out: bool
    line: int
    #: the [each.NAME] template this job was made from, None for a [jobs.NAME] table
    template: str | None = None
    #: False when ``key`` is just the job's name: a missing count is then no surprise
    key_given: bool = True
    #: when the job must be done by (its own, its template's, or [defaults])
    deadline: Deadline | None = None
    #: the [pools] resource it takes a slot of while it runs
    pool: str | None = None

    def for_key(self, key: str) -> JobSpec:
        """The job a template makes for one key: ``NAME.KEY``, with {key} filled in."""
        command = self.command and tuple(p.replace(KEY_PLACEHOLDER, key) for p in self.command)
        sql = self.sql and Path(str(self.sql).replace(KEY_PLACEHOLDER, key))
        return dataclasses.replace(
            self,
            name=f"{self.name}.{key}",
            key=key,
            key_given=True,
            command=command,
            sql=sql,
            template=self.name,
        )


@dataclasses.dataclass(frozen=True)
class SizingSpec:
    query: str | None
    server: str | None  # a worker name or "primary"; None: the first worker
    line: int
    #: servers tried in order when the sizing server is refused (lagging, stopped,
    #: unreachable); None: every other worker, in catalog order ("primary" only if named)
    fallback: tuple[str, ...] | None = None
    #: a replica lagging more than this is refused for the sizing read (None: the lag
    #: guard's max_lag, else 60 s); a stopped one always is
    max_lag: float | None = None
    #: a template making fewer jobs than this share of its median of recent nights fails
    #: the night (0: never)
    key_floor: float = 0.5


@dataclasses.dataclass(frozen=True)
class ScheduleSpec:
    """`govern schedule serve`: when nights start and what happens to missed ones."""

    cron: str
    timezone: str
    misfire_grace: float
    coalesce: bool
    shutdown_grace: float
    #: serve on two hosts: the standby polls the primary's lock this often and takes over
    #: within it (service.py); None: one host, no lock on the primary
    lease: float | None = None

    @property
    def description(self) -> str:
        """What identifies the trigger: a changed one forgets the remembered next fire."""
        return f"cron {self.cron} {self.timezone}"


@dataclasses.dataclass(frozen=True)
class ReadyWhen:
    """``[ready_when]``: a read-only query that must return true before the night starts."""

    query: str
    server: str | None  # a worker name or "primary"; None: the sizing server
    timeout: float
    interval: float
    line: int


@dataclasses.dataclass(frozen=True)
class HookSpec:
    """Where one event goes: a command (the event as JSON on stdin), a webhook, mail."""

    command: tuple[str, ...] | None
    webhook: str | None
    mail: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class LagGuard:
    max_lag: float
    heartbeat_table: str
    heartbeat_utc: bool
    check_interval: float
    #: how long a worker may be held without a break before it is given up for the night
    #: (its jobs move to the other workers, or fail); None: wait for as long as it lags
    max_wait: float | None = 1800.0


@dataclasses.dataclass(frozen=True)
class Catalog:
    path: Path
    name: str
    policy: str
    workers: tuple[WorkerSpec, ...]
    primary: Mapping[str, Any] | None
    jobs: tuple[JobSpec, ...]
    templates: tuple[JobSpec, ...]  # [each.NAME]: one job per unclaimed sizing key
    sizing: SizingSpec
    rows_per_second: float  # the guess before any history exists
    history_window: int  # how many recent successful runs per job the estimates learn from
    lag_guard: LagGuard | None
    #: checks handed to every job ($GOVERN_THROTTLE): govern throttle wait, load, chunk
    throttle: ThrottleSpec | None
    schedule: ScheduleSpec | None
    kill_grace: float  # after TERM, how long a job has before KILL
    #: when every job of the night must be done by
    deadline: Deadline | None = None
    #: [pools]: name -> how many jobs holding it may run at once, across all lanes
    pools: Mapping[str, int] = dataclasses.field(default_factory=dict)
    ready_when: ReadyWhen | None = None
    #: [hooks.on_*]: event name (without on_) -> where it goes
    hooks: Mapping[str, HookSpec] = dataclasses.field(default_factory=dict)
    hook_timeout: float = 30.0

    @property
    def directory(self) -> Path:
        return self.path.parent

    def job(self, name: str) -> JobSpec:
        return self._jobs_by_name[name]

    @functools.cached_property
    def _jobs_by_name(self) -> dict[str, JobSpec]:
        """Name -> job, built once: a 5,000-job night looks jobs up by name constantly."""
        return {j.name: j for j in self.jobs}

    def worker(self, name: str) -> WorkerSpec:
        return next(w for w in self.workers if w.name == name)

    def primary_settings(self) -> ConnectionSettings | None:
        return None if self.primary is None else resolve_settings(**self.primary)

    def expand(self, keys: Sequence[str]) -> tuple[Catalog, list[str]]:
        """The catalog with each template made into one job per key no [jobs] table claims,
        and the keys that could not be used (not a safe name, or no such SQL file).

        A dependency on a template's name waits for every job made from it."""
        if not self.templates:
            return self, []
        claimed = {j.key for j in self.jobs}
        usable = [k for k in dict.fromkeys(keys) if k not in claimed]
        unsafe = [k for k in usable if not NAME_RE.match(k)]
        usable = [k for k in usable if NAME_RE.match(k)]
        made: dict[str, list[JobSpec]] = {}
        missing: list[str] = []
        for template in self.templates:
            made[template.name] = []
            for key in usable:
                job = template.for_key(key)
                if job.sql is not None and not job.sql.is_file():
                    missing.append(f"{job.name} ({job.sql} does not exist)")
                    continue
                made[template.name].append(job)

        def resolve(deps: tuple[str, ...]) -> tuple[str, ...]:
            out: list[str] = []
            for dep in deps:
                if dep in made:
                    out.extend(j.name for j in made[dep])
                else:
                    out.append(dep)
            return tuple(out)

        jobs: list[JobSpec] = []
        for entry in sorted([*self.jobs, *self.templates], key=lambda j: j.line):
            for job in made[entry.name] if entry.template else [entry]:
                jobs.append(
                    dataclasses.replace(job, order=len(jobs), depends_on=resolve(job.depends_on))
                )
        unusable = [f"{k!r} (not a safe job name)" for k in unsafe] + missing
        return dataclasses.replace(self, jobs=tuple(jobs), templates=()), unusable
