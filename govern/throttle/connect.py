"""From a spec to a running throttler: links to the servers, the replicas found, the checks.

Mistakes show before any work starts: a status variable the server does not
have or a throttle query that fails is a usage error (exit 2), an unreachable
target a server error (exit 3). A replica that is unreachable later only holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from govern.connection import ConnectionSettings, resolve_settings
from govern.errors import UsageError
from govern.output import info
from govern.state import StateStore
from govern.throttle.checks import (
    Check,
    FlagFile,
    QueryCheck,
    ReplicaLag,
    StatusAbove,
    trend_window,
)
from govern.throttle.handoff import Handoff
from govern.throttle.links import Link, find_replicas, listed_replica, target_link
from govern.throttle.record import HoldContext, StateHoldLog
from govern.throttle.spec import ThrottleSpec, config_spec, parse_items
from govern.throttle.throttler import HoldLog, Throttler


def choose_spec(items: Iterable[str] = (), where: str = "--throttle") -> ThrottleSpec | None:
    """The checks for this command: its own items, else the job's, else the config file's."""
    given = list(items)
    if given:
        return parse_items(given, where)
    handoff = Handoff.from_environment()
    if handoff is not None:
        return handoff.spec
    return config_spec()


def job_settings() -> ConnectionSettings | None:
    """The account a job's checks connect with, from ``$GOVERN_THROTTLE``."""
    handoff = Handoff.from_environment()
    if handoff is None or not handoff.defaults_file:
        return None
    return resolve_settings(defaults_file=handoff.defaults_file)


def job_state() -> str | None:
    """The state file a job's holds go to (its run's or night's), from ``$GOVERN_THROTTLE``."""
    handoff = Handoff.from_environment()
    return handoff.state if handoff is not None else None


def open_throttler(
    spec: ThrottleSpec,
    settings: ConnectionSettings | None,
    *,
    work: str,
    state: StateStore | str | os.PathLike[str] | None = None,
    log: HoldLog | None = None,
    notify: Callable[[str], None] | None = info,
) -> Throttler:
    """A throttler running ``spec``'s checks against the server ``settings`` reach.

    Holds are recorded in ``state`` (a store or a path; None: only in memory) under
    the run or job of this process's environment, or in ``log`` when given.
    """
    if spec.needs_target and settings is None:
        raise UsageError(f"{spec.describe()}: the checks need a server to connect to")
    target = target_link(settings) if settings is not None else None
    checks = build_checks(spec, target, settings, notify)
    if log is None and state is not None:
        label = target.label if target is not None else None
        log = StateHoldLog(state, HoldContext.from_environment(work, label))
    return Throttler(checks, interval=spec.interval, max_wait=spec.max_wait, log=log, notify=notify)


def build_checks(
    spec: ThrottleSpec,
    target: Link | None,
    settings: ConnectionSettings | None,
    notify: Callable[[str], None] | None = None,
) -> list[Check]:
    checks: list[Check] = []
    try:
        if spec.max_lag is not None:
            if spec.replicas:
                replicas = [listed_replica(r, settings) for r in spec.replicas]
            else:
                assert target is not None
                replicas = find_replicas(target)
                if not replicas and notify is not None:
                    notify(f"throttle: {target.label} has no replica: max_lag has nothing to watch")
            checks.append(
                ReplicaLag(
                    replicas,
                    spec.max_lag,
                    heartbeat_table=spec.heartbeat_table,
                    heartbeat_utc=spec.heartbeat_utc,
                    trend_window=trend_window(spec.interval),
                )
            )
        for critical, bounds in ((False, spec.max_load), (True, spec.critical_load)):
            for variable, bound in bounds:
                assert target is not None
                status = StatusAbove(target, variable, bound, critical=critical)
                status.value()  # an unknown variable fails now, not at the first poll
                checks.append(status)
        if spec.query:
            assert target is not None
            query = QueryCheck(target, spec.query)
            first = query.read()
            if first.holds and first.value is None:
                raise UsageError(f"query: {first.reason}")
            checks.append(query)
    except BaseException:
        for check in checks:
            check.close()
        if target is not None:
            target.close()
        raise
    if spec.flag_file:
        checks.append(FlagFile(spec.flag_file))
    if spec.critical_flag_file:
        checks.append(FlagFile(spec.critical_flag_file, critical=True))
    return checks
