"""Reading a catalog file: TOML in, a checked :class:`Catalog` out, or one ``file:line`` error.

A bad catalog (a cycle, an unknown dependency or worker, a typo in a key, a missing SQL file)
fails with exit 2 before anything runs, so a night never starts half-configured. The format is
documented in docs/schedule.md ("The catalog").
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from govern.connection import resolve_settings
from govern.errors import ConfigError, GovernError
from govern.readonly import read_problem
from govern.schedulers.catalog.cycles import find_cycle
from govern.schedulers.catalog.deadline import Deadline, parse_deadline
from govern.schedulers.catalog.model import (
    CONNECTION_KEYS,
    ENDS,
    HOOK_EVENTS,
    KEY_PLACEHOLDER,
    NAME_RE,
    POLICIES,
    WRAP_MODES,
    Catalog,
    HookSpec,
    JobSpec,
    LagGuard,
    ReadyWhen,
    ScheduleSpec,
    SizingSpec,
    WorkerSpec,
)
from govern.schedulers.catalog.reader import Reader
from govern.schedulers.cron import local_timezone, make_trigger

if TYPE_CHECKING:
    from govern.throttle.spec import ThrottleSpec


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
    reader = Reader(path, text)
    try:
        return _build(reader, data)
    except GovernError:
        raise
    except (TypeError, ValueError) as exc:  # a shape the checks above did not foresee
        raise ConfigError(f"{path}: {exc}") from None


def _build(r: Reader, data: Mapping[str, Any]) -> Catalog:
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
        fallback=r.names(sizing_data, "fallback", "sizing"),
        max_lag=r.duration(sizing_data, "max_lag", None, "sizing"),
        key_floor=r.number(sizing_data, "key_floor", 0.5, "sizing"),
    )
    if sizing.key_floor > 1:
        raise r.fail(
            f"key_floor is a share of recent nights' keys (0 to 1), got {sizing.key_floor:g}",
            "sizing",
            "key_floor",
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
    for server in sizing.fallback or ():
        if server not in servers:
            raise r.fail(
                f"sizing.fallback {server!r} is not a worker"
                + (" or the primary" if primary is not None else ""),
                "sizing",
                "fallback",
            )
    estimate = r.table(data.get("estimate", {}), "estimate", "estimate")
    pools = _pools(r, data.get("pools"))
    for job in [*jobs, *templates]:
        if job.pool is not None and job.pool not in pools:
            section = "each" if job.template else "jobs"
            close = difflib.get_close_matches(job.pool, sorted(pools), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (declare it under [pools])"
            raise r.fail(
                f"job {job.name}: unknown pool {job.pool!r}{hint}", section, job.name, "pool"
            )
    ready_when = _ready_when(r, data.get("ready_when"))
    if ready_when is not None and ready_when.server not in (None, *servers):
        raise r.fail(
            f"ready_when.server {ready_when.server!r} is not a worker"
            + (" or the primary" if primary is not None else ""),
            "ready_when",
            "server",
        )
    hooks_data = r.table(data.get("hooks", {}), "hooks", "hooks")
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
        throttle=_throttle(r, data.get("throttle")),
        schedule=_schedule(r, data.get("schedule"), has_primary=primary is not None),
        kill_grace=r.duration(data, "kill_grace", 10.0) or 0.0,
        deadline=_deadline(r, data),
        pools=pools,
        ready_when=ready_when,
        hooks=_hooks(r, hooks_data),
        hook_timeout=r.duration(hooks_data, "timeout", 30.0, "hooks") or 30.0,
    )


def _connection(r: Reader, data: Mapping[str, Any], *where: str) -> dict[str, Any]:
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


def _workers(r: Reader, data: Any) -> tuple[WorkerSpec, ...]:
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
    r: Reader, data: Any, each: Any, defaults: Mapping[str, Any], worker_names: set[str]
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


def _tables(r: Reader, data: Any, section: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise r.fail(f"[{section}] must be a table of [{section}.NAME] tables", section)
    return data


def _job(
    r: Reader,
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
    opts_out = r.boolean(merged, "opts_out", False, *where)
    if opts_out and not wrap:
        raise r.fail(
            f"job {name}: opts_out = true says how the job runs under `govern run`: it needs"
            " wrap = true",
            *where,
            "opts_out",
        )
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
        opts_out=opts_out,
        line=r.line(*where),
        template=name if section == "each" else None,
        key_given="key" in spec,
        deadline=_deadline(r, merged, *where),
        pool=r.string(merged, "pool", *where),
    )


def _what_to_run(
    r: Reader, spec: Mapping[str, Any], *where: str, template: bool
) -> tuple[Path | None, tuple[str, ...] | None]:
    if ("sql" in spec) == ("command" in spec):
        raise r.fail("a job needs exactly one of sql = FILE or command = ...", *where)
    if "sql" in spec:
        value = r.string(spec, "sql", *where) or ""
        file = (r.path.parent / value).resolve()
        if not (template and KEY_PLACEHOLDER in value) and not file.is_file():
            raise r.fail(f"sql file {value}: no such file", *where, "sql")
        return file, None
    return None, _command(r, spec["command"], *where)


def _command(r: Reader, command: Any, *where: str) -> tuple[str, ...]:
    """A shell string (run by /bin/sh -c) or a list of arguments whose program, when a path,
    exists beside the catalog and is executable."""
    if isinstance(command, str) and command.strip():
        return ("/bin/sh", "-c", command)
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
        return tuple(command)
    raise r.fail("command must be a shell string or a non-empty list of arguments", *where)


def _check_dependencies(r: Reader, jobs: list[JobSpec]) -> None:
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


def _lag_guard(r: Reader, data: Any) -> LagGuard | None:
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
        max_wait=_max_wait(r, data),
    )


def _max_wait(r: Reader, data: Mapping[str, Any]) -> float | None:
    """``max_wait = "30m"`` (the default), or ``"forever"`` to wait as long as a replica lags."""
    if data.get("max_wait") == "forever":
        return None
    value = r.duration(data, "max_wait", 1800.0, "lag_guard")
    if not value:
        raise r.fail('max_wait must be a duration > 0 or "forever"', "lag_guard", "max_wait")
    return value


def _throttle(r: Reader, data: Any) -> ThrottleSpec | None:
    """``[throttle]``: the checks every job gets (docs/throttle.md has the keys)."""
    if data is None:
        return None
    from govern.throttle.spec import from_table

    def fail(key: str, message: str) -> GovernError:
        return r.fail(message, "throttle", *([key] if key else []))

    spec = from_table(data, fail, base=r.path.parent)
    return spec if spec.has_checks else None


def _schedule(r: Reader, data: Any, *, has_primary: bool = False) -> ScheduleSpec | None:
    if data is None:
        return None
    data = r.table(data, "schedule", "schedule")
    lease = r.duration(data, "lease", None, "schedule")
    if lease is not None and not has_primary:
        raise r.fail(
            "lease: serve on two hosts holds its lock on the primary: the catalog needs [primary]",
            "schedule",
            "lease",
        )
    if lease is not None and lease < 1:
        raise r.fail("lease: at least 1s", "schedule", "lease")
    cron = r.string(data, "cron", "schedule")
    if not cron:
        raise r.fail("[schedule] needs cron (e.g. cron = '30 1 * * *')", "schedule")
    timezone = r.string(data, "timezone", "schedule") or local_timezone()
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
        lease=lease,
    )


def _deadline(r: Reader, data: Mapping[str, Any], *where: str) -> Deadline | None:
    if data.get("deadline") is None:
        return None
    try:
        return parse_deadline(data["deadline"])
    except ValueError as exc:
        raise r.fail(f"deadline: {exc}", *where, "deadline") from None


def _pools(r: Reader, data: Any) -> dict[str, int]:
    """``[pools]``: ``NAME = N``, the most jobs naming the pool that run at once."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise r.fail("[pools] must be a table of NAME = how many at once", "pools")
    pools = {}
    for name in data:
        if not NAME_RE.match(name):
            raise r.fail(f"pool name {name!r}: letters, digits, _ . : - only", "pools", name)
        pools[name] = r.integer(data, name, 1, "pools", minimum=1)
    return pools


def _ready_when(r: Reader, data: Any) -> ReadyWhen | None:
    if data is None:
        return None
    data = r.table(data, "ready_when", "ready_when")
    query = r.string(data, "query", "ready_when")
    if not query or not query.strip():
        raise r.fail(
            "[ready_when] needs query (e.g. query = 'SELECT COUNT(*) > 0 FROM etl.loads"
            " WHERE day = CURDATE()')",
            "ready_when",
        )
    problem = read_problem(query)
    if problem is not None:
        raise r.fail(
            f"the ready_when query must be one SELECT, WITH or SHOW statement, {problem}",
            "ready_when",
            "query",
        )
    return ReadyWhen(
        query=query,
        server=r.string(data, "server", "ready_when"),
        timeout=r.duration(data, "timeout", 3600.0, "ready_when") or 0.0,
        interval=max(r.duration(data, "interval", 60.0, "ready_when") or 0.0, 0.1),
        line=r.line("ready_when", "query"),
    )


_MAIL = re.compile(r"^[^@\s,<>]+@[^@\s,<>]+$")


def _hooks(r: Reader, data: Mapping[str, Any]) -> dict[str, HookSpec]:
    """``[hooks.on_failure]`` and the others: ``command``, ``webhook``, ``mail``."""
    hooks = {}
    for event in HOOK_EVENTS:
        if event not in data:
            continue
        where = ("hooks", event)
        spec = r.table(data[event], "hook", *where)
        command = _command(r, spec["command"], *where) if "command" in spec else None
        webhook = r.string(spec, "webhook", *where)
        if webhook is not None and not re.match(r"^https?://[^/\s]+", webhook):
            raise r.fail("webhook must be an http:// or https:// URL", *where, "webhook")
        mail = r.names(spec, "mail", *where) or ()
        for address in mail:
            if not _MAIL.match(address):
                raise r.fail(f"mail: {address!r} is not an address", *where, "mail")
        if command is None and webhook is None and not mail:
            raise r.fail(f"[hooks.{event}] needs command, webhook or mail", *where)
        hooks[event.removeprefix("on_")] = HookSpec(command, webhook, mail)
    return hooks
