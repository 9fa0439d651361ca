"""The summary catalog: a TOML file of jobs and workers, checked whole before anything runs.

A bad catalog (a cycle, an unknown dependency or worker, a typo in a key, a
missing SQL file) fails with one ``file:line: message`` and exit 2, so a night
never starts half-configured. The format is documented in docs/schedule.md
("The catalog").
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from govern.connection import ConnectionSettings, resolve_settings
from govern.errors import ConfigError, GovernError
from govern.schedulers.tomllines import key_lines, line_of
from govern.units import parse_duration

POLICIES = ("fifo", "sjf", "ljf", "wspt", "two-ended")
WRAP_MODES = ("auto", "global", "threshold", "session")
ENDS = ("short", "long")
#: A job or worker name ends up in file names, environment values and `govern run --name`.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
CONNECTION_KEYS = ("host", "port", "user", "socket", "database", "dsn", "defaults_file")
_JOB_SETTINGS = ("timeout", "retries", "retry_delay", "wrap", "wrap_mode", "weight")
_KEYS: dict[str, tuple[str, ...]] = {
    "": (
        "name",
        "policy",
        "kill_grace",
        "defaults",
        "sizing",
        "estimate",
        "schedule",
        "lag_guard",
        "primary",
        "workers",
        "jobs",
        "each",
    ),
    "defaults": _JOB_SETTINGS,
    "sizing": ("query", "server"),
    "estimate": ("rows_per_second", "history"),
    "schedule": ("cron", "timezone", "misfire_grace", "coalesce", "shutdown_grace"),
    "lag_guard": ("max_lag", "heartbeat_table", "heartbeat_utc", "check_interval"),
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
    line: int
    #: the [each.NAME] template this job was made from, None for a [jobs.NAME] table
    template: str | None = None
    #: False when ``key`` is just the job's name: a missing count is then no surprise
    key_given: bool = True

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


@dataclasses.dataclass(frozen=True)
class ScheduleSpec:
    """`govern schedule serve`: when nights start and what happens to missed ones."""

    cron: str
    timezone: str
    misfire_grace: float
    coalesce: bool
    shutdown_grace: float

    @property
    def description(self) -> str:
        """What identifies the trigger: a changed one forgets the remembered next fire."""
        return f"cron {self.cron} {self.timezone}"


@dataclasses.dataclass(frozen=True)
class LagGuard:
    max_lag: float
    heartbeat_table: str
    heartbeat_utc: bool
    check_interval: float


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
    schedule: ScheduleSpec | None
    kill_grace: float  # after TERM, how long a job has before KILL

    @property
    def directory(self) -> Path:
        return self.path.parent

    def job(self, name: str) -> JobSpec:
        return next(j for j in self.jobs if j.name == name)

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


class _Reader:
    """Typed access to the parsed TOML that turns every mistake into ``file:line: message``."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)

    def fail(self, message: str, *where: str) -> ConfigError:
        return ConfigError(f"{self.path}:{line_of(self.lines, *where)}: {message}")

    def line(self, *where: str) -> int:
        return line_of(self.lines, *where)

    def table(self, data: Mapping[str, Any], kind: str, *where: str) -> Mapping[str, Any]:
        """A sub-table, checking its keys against the known ones (with a suggestion)."""
        if not isinstance(data, Mapping):
            raise self.fail(f"[{'.'.join(where)}] must be a table", *where)
        known = _KEYS[kind]
        for key in data:
            if key == "password" and "defaults_file" in known:
                raise self.fail(
                    "a password does not belong in the catalog: use defaults_file (a 0600 option file)",
                    *where,
                    key,
                )
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                place = f"[{'.'.join(where)}]" if where else "the catalog"
                raise self.fail(f"unknown key {key!r} in {place}{hint}", *where, key)
        return data

    def string(self, data: Mapping[str, Any], key: str, *where: str) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{key} must be a string", *where, key)
        return value

    def number(
        self, data: Mapping[str, Any], key: str, default: float, *where: str, minimum: float = 0
    ) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
            raise self.fail(f"{key} must be a number >= {minimum:g}, got {value!r}", *where, key)
        return float(value)

    def integer(
        self, data: Mapping[str, Any], key: str, default: int, *where: str, minimum: int = 0
    ) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"{key} must be an integer >= {minimum}, got {value!r}", *where, key)
        return value

    def boolean(self, data: Mapping[str, Any], key: str, default: bool, *where: str) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"{key} must be true or false, got {value!r}", *where, key)
        return value

    def duration(
        self, data: Mapping[str, Any], key: str, default: float | None, *where: str
    ) -> float | None:
        value = data.get(key)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise self.fail(f"{key}: {exc}", *where, key) from None

    def choice(
        self, data: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], *where: str
    ) -> str:
        value = data.get(key, default)
        if value not in choices:
            raise self.fail(
                f"{key} must be one of {', '.join(choices)}; got {value!r}", *where, key
            )
        return str(value)

    def names(self, data: Mapping[str, Any], key: str, *where: str) -> tuple[str, ...] | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{key} must be a list of names", *where, key)
        return tuple(value)


def load_catalog(path: str | Path) -> Catalog:
    """Read and check a catalog; raise ConfigError (exit 2) naming file:line on any mistake."""
    path = Path(path).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the catalog ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the catalog is not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", message)
        line = found.group(1) if found else "1"
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise ConfigError(f"{path}:{line}: {message}") from None
    reader = _Reader(path, text)
    try:
        return _build(reader, data)
    except GovernError:
        raise
    except (TypeError, ValueError) as exc:  # a shape the checks above did not foresee
        raise ConfigError(f"{path}: {exc}") from None


def _build(r: _Reader, data: Mapping[str, Any]) -> Catalog:
    r.table(data, "")
    name = r.string(data, "name") or r.path.stem
    if not NAME_RE.match(name):
        raise r.fail(f"name {name!r} must be letters, digits, _ . : - (up to 128)", "name")
    policy = r.choice(data, "policy", "sjf", POLICIES)
    defaults = r.table(data.get("defaults", {}), "defaults", "defaults")
    workers = _workers(r, data.get("workers"))
    jobs, templates = _jobs(
        r, data.get("jobs"), data.get("each"), defaults, {w.name for w in workers}
    )
    jobs = tuple(dataclasses.replace(j, order=i) for i, j in enumerate(jobs))
    sizing_data = r.table(data.get("sizing", {}), "sizing", "sizing")
    sizing = SizingSpec(
        query=r.string(sizing_data, "query", "sizing"),
        server=r.string(sizing_data, "server", "sizing"),
        line=r.line("sizing", "query"),
    )
    primary = None
    if "primary" in data:
        primary = _connection(r, r.table(data["primary"], "primary", "primary"), "primary")
    servers = {w.name for w in workers} | ({"primary"} if primary is not None else set())
    if sizing.server is not None and sizing.server not in servers:
        raise r.fail(
            f"sizing.server {sizing.server!r} is not a worker"
            + (" or the primary" if primary is not None else ""),
            "sizing",
            "server",
        )
    estimate = r.table(data.get("estimate", {}), "estimate", "estimate")
    return Catalog(
        path=r.path,
        name=name,
        policy=policy,
        workers=workers,
        primary=primary,
        jobs=jobs,
        templates=templates,
        sizing=sizing,
        rows_per_second=r.number(estimate, "rows_per_second", 100_000, "estimate", minimum=1e-9),
        history_window=r.integer(estimate, "history", 20, "estimate", minimum=1),
        lag_guard=_lag_guard(r, data.get("lag_guard")),
        schedule=_schedule(r, data.get("schedule")),
        kill_grace=r.duration(data, "kill_grace", 10.0) or 0.0,
    )


def _connection(r: _Reader, data: Mapping[str, Any], *where: str) -> dict[str, Any]:
    """Connection keys for resolve_settings (passwords were refused by the key check)."""
    connection: dict[str, Any] = {}
    for key in CONNECTION_KEYS:
        if key == "port":
            if "port" in data:
                connection["port"] = r.integer(data, "port", 0, *where, minimum=1)
            continue
        value = r.string(data, key, *where)
        if value is None:
            continue
        if key == "defaults_file":
            file = (r.path.parent / value).resolve()
            if not file.is_file():
                raise r.fail(f"defaults_file {value}: no such file", *where, key)
            value = str(file)
        connection[key] = value
    try:
        resolve_settings(**connection)
    except GovernError as exc:
        raise r.fail(exc.message, *where) from None
    return connection


def _workers(r: _Reader, data: Any) -> tuple[WorkerSpec, ...]:
    if not data:
        raise r.fail("the catalog needs at least one [workers.NAME] table", "workers")
    if not isinstance(data, Mapping):
        raise r.fail("[workers] must be a table of [workers.NAME] tables", "workers")
    workers = []
    for name, spec in data.items():
        where = ("workers", name)
        if not NAME_RE.match(name):
            raise r.fail(f"worker name {name!r}: letters, digits, _ . : - only", *where)
        spec = r.table(spec, "worker", *where)
        end = spec.get("end")
        if end is not None and end not in ENDS:
            raise r.fail(f"end must be 'short' or 'long', got {end!r}", *where, "end")
        workers.append(
            WorkerSpec(
                name=name,
                connection=_connection(r, spec, *where),
                concurrency=r.integer(spec, "concurrency", 1, *where, minimum=1),
                end=end,
                line=r.line(*where),
            )
        )
    return tuple(workers)


def _jobs(
    r: _Reader, data: Any, each: Any, defaults: Mapping[str, Any], worker_names: set[str]
) -> tuple[tuple[JobSpec, ...], tuple[JobSpec, ...]]:
    """[jobs.NAME] tables and [each.NAME] templates, checked together (names, dependencies)."""
    if not data and not each:
        raise r.fail("the catalog needs at least one [jobs.NAME] or [each.NAME] table", "jobs")
    jobs = [
        _job(r, "jobs", name, spec, defaults, worker_names)
        for name, spec in _tables(r, data, "jobs").items()
    ]
    templates = [
        _job(r, "each", name, spec, defaults, worker_names)
        for name, spec in _tables(r, each, "each").items()
    ]
    for template in templates:
        if any(j.name == template.name for j in jobs):
            raise r.fail(f"{template.name} is both a job and a template", "each", template.name)
    _check_dependencies(r, [*jobs, *templates])
    return tuple(jobs), tuple(templates)


def _tables(r: _Reader, data: Any, section: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise r.fail(f"[{section}] must be a table of [{section}.NAME] tables", section)
    return data


def _job(
    r: _Reader,
    section: str,
    name: str,
    spec: Any,
    defaults: Mapping[str, Any],
    worker_names: set[str],
) -> JobSpec:
    where = (section, name)
    if not NAME_RE.match(name):
        raise r.fail(f"job name {name!r}: letters, digits, _ . : - only", *where)
    spec = r.table(spec, "job" if section == "jobs" else "each", *where)
    merged = {**defaults, **spec}
    sql, command = _what_to_run(r, spec, *where, template=section == "each")
    sources = [k for k in ("key", "rows", "rows_from_table") if k in spec]
    if len(sources) > 1:
        raise r.fail(f"size a job one way: {' or '.join(sources)}", *where, sources[1])
    rows = r.integer(spec, "rows", 0, *where) if "rows" in spec else None
    table = r.string(spec, "rows_from_table", *where)
    if table is not None and not re.fullmatch(r"[^.\s]+\.[^.\s]+", table):
        raise r.fail(f"rows_from_table must be schema.table, got {table!r}", *where)
    allowed = r.names(spec, "workers", *where)
    for worker in allowed or ():
        if worker not in worker_names:
            raise r.fail(f"job {name}: unknown worker {worker!r}", *where, "workers")
    wrap = r.boolean(merged, "wrap", False, *where)
    return JobSpec(
        name=name,
        order=0,  # set by _build: catalog order, the FIFO order
        sql=sql,
        command=command,
        key=r.string(spec, "key", *where) or name,
        rows=rows,
        rows_from_table=table,
        depends_on=r.names(spec, "depends_on", *where) or (),
        workers=allowed,
        weight=r.number(merged, "weight", 1.0, *where, minimum=1e-9),
        timeout=r.duration(merged, "timeout", None, *where),
        retries=r.integer(merged, "retries", 0, *where),
        retry_delay=r.duration(merged, "retry_delay", 30.0, *where) or 0.0,
        wrap=wrap,
        wrap_mode=r.choice(merged, "wrap_mode", "auto", WRAP_MODES, *where),
        line=r.line(*where),
        template=name if section == "each" else None,
        key_given="key" in spec,
    )


def _what_to_run(
    r: _Reader, spec: Mapping[str, Any], *where: str, template: bool
) -> tuple[Path | None, tuple[str, ...] | None]:
    if ("sql" in spec) == ("command" in spec):
        raise r.fail("a job needs exactly one of sql = FILE or command = ...", *where)
    if "sql" in spec:
        value = r.string(spec, "sql", *where) or ""
        file = (r.path.parent / value).resolve()
        if not (template and KEY_PLACEHOLDER in value) and not file.is_file():
            raise r.fail(f"sql file {value}: no such file", *where, "sql")
        return file, None
    command = spec["command"]
    if isinstance(command, str) and command.strip():
        return None, ("/bin/sh", "-c", command)
    if (
        isinstance(command, list)
        and command
        and all(isinstance(part, str) and part for part in command)
    ):
        program = command[0]
        if "/" in program and KEY_PLACEHOLDER not in program:
            file = r.path.parent / program
            if not file.is_file():
                raise r.fail(f"command {program}: no such file", *where, "command")
            if not os.access(file, os.X_OK):
                raise r.fail(f"command {program}: not executable (chmod +x)", *where, "command")
        return None, tuple(command)
    raise r.fail("command must be a shell string or a non-empty list of arguments", *where)


def _check_dependencies(r: _Reader, jobs: list[JobSpec]) -> None:
    """Unknown names first, then cycles: both are reported with the job's line."""
    names = {j.name for j in jobs}
    section = {j.name: "each" if j.template else "jobs" for j in jobs}
    for job in jobs:
        where = (section[job.name], job.name, "depends_on")
        for dep in job.depends_on:
            if dep not in names:
                close = difflib.get_close_matches(dep, sorted(names), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise r.fail(f"job {job.name}: unknown dependency {dep!r}{hint}", *where)
            if dep == job.name:
                raise r.fail(f"job {job.name} depends on itself", *where)
    cycle = find_cycle({j.name: j.depends_on for j in jobs})
    if cycle:
        raise r.fail(
            f"dependency cycle: {' -> '.join(cycle)}", section[cycle[0]], cycle[0], "depends_on"
        )


def find_cycle(graph: Mapping[str, tuple[str, ...]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]``, or None. Iterative DFS (catalogs can be deep)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in graph:
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        state[root] = 1
        while stack:
            node, index = stack[-1]
            deps = graph.get(node, ())
            if index < len(deps):
                stack[-1] = (node, index + 1)
                nxt = deps[index]
                if state.get(nxt) == 1:
                    return [*path[path.index(nxt) :], nxt]
                if not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None


def _lag_guard(r: _Reader, data: Any) -> LagGuard | None:
    if data is None:
        return None
    data = r.table(data, "lag_guard", "lag_guard")
    if "max_lag" not in data:
        raise r.fail("[lag_guard] needs max_lag (e.g. max_lag = '30s')", "lag_guard")
    table = r.string(data, "heartbeat_table", "lag_guard") or "percona.heartbeat"
    if not re.fullmatch(r"[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+", table):
        raise r.fail(f"heartbeat_table must be schema.table, got {table!r}", "lag_guard")
    return LagGuard(
        max_lag=r.duration(data, "max_lag", None, "lag_guard") or 0.0,
        heartbeat_table=table,
        heartbeat_utc=r.boolean(data, "heartbeat_utc", False, "lag_guard"),
        check_interval=r.duration(data, "check_interval", 5.0, "lag_guard") or 1.0,
    )


def _schedule(r: _Reader, data: Any) -> ScheduleSpec | None:
    if data is None:
        return None
    data = r.table(data, "schedule", "schedule")
    cron = r.string(data, "cron", "schedule")
    if not cron:
        raise r.fail("[schedule] needs cron (e.g. cron = '30 1 * * *')", "schedule")
    timezone = r.string(data, "timezone", "schedule") or _local_timezone()
    from govern.schedulers.service import make_trigger

    try:
        make_trigger(cron, timezone)
    except ValueError as exc:
        raise r.fail(f"schedule: {exc}", "schedule", "cron") from None
    except LookupError:
        raise r.fail(f"unknown timezone {timezone!r}", "schedule", "timezone") from None
    return ScheduleSpec(
        cron=cron,
        timezone=timezone,
        misfire_grace=r.duration(data, "misfire_grace", 3600.0, "schedule") or 0.0,
        coalesce=r.boolean(data, "coalesce", True, "schedule"),
        shutdown_grace=r.duration(data, "shutdown_grace", 300.0, "schedule") or 0.0,
    )


def _local_timezone() -> str:
    from tzlocal import get_localzone_name

    return get_localzone_name() or "UTC"
