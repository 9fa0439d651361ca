"""One throttler for all batch work: hold while replicas lag or the server is loaded.

Library first (docs/throttle.md)::

    from govern.throttle import open_throttler, parse_items
    throttler = open_throttler(parse_items(["max_lag=2s", "max_load=Threads_running=25"]),
                               settings, work="nightly purge")
    for batch in batches:
        throttler.pause()          # returns at once unless a check holds
        write(batch)
    throttler.close()

:func:`wait` is ``govern throttle wait`` as a call: it blocks until every check
passes, with the checks of the job's ``govern run --throttle`` (or the scheduler's
catalog) when none are given. The batch writer, ``govern load``, ``govern chunk``
and the scheduler's lag guard all use the same :class:`Throttler`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from govern.connection import ConnectionSettings, resolve_settings
from govern.errors import UsageError
from govern.throttle.connect import choose_spec, job_settings, job_state, open_throttler
from govern.throttle.spec import ThrottleSpec, parse_items
from govern.throttle.throttler import (
    EXIT_CRITICAL,
    EXIT_TIMEOUT,
    Hold,
    ThrottleCritical,
    Throttler,
    ThrottleStop,
    ThrottleTimeout,
)

__all__ = [
    "EXIT_CRITICAL",
    "EXIT_TIMEOUT",
    "Hold",
    "ThrottleCritical",
    "ThrottleSpec",
    "ThrottleStop",
    "ThrottleTimeout",
    "Throttler",
    "WaitResult",
    "job_throttler",
    "open_throttler",
    "parse_items",
    "wait",
]


@dataclasses.dataclass
class WaitResult:
    waited: float  # seconds blocked
    holds: list[Hold]


def job_throttler(
    checks: Iterable[str] | ThrottleSpec = (),
    *,
    settings: ConnectionSettings | None = None,
    state: str | os.PathLike[str] | None = None,
    work: str = "govern.throttle",
    where: str = "--throttle",
) -> Throttler:
    """A throttler for a job's own loop: the given checks, else the job's (``$GOVERN_THROTTLE``),
    else the config file's; UsageError when there are none. ``where`` names the checks'
    origin in errors."""
    spec = checks if isinstance(checks, ThrottleSpec) else choose_spec(checks, where)
    if spec is None or not spec.has_checks:
        raise UsageError(
            "no throttle checks: give some (max_lag=2s …), run under govern run --throttle,"
            " or add a [throttle] table to govern.toml"
        )
    if settings is None and spec.needs_target:
        settings = job_settings() or resolve_settings()
    return open_throttler(spec, settings, work=work, state=state or job_state())


def wait(
    checks: Iterable[str] | ThrottleSpec = (),
    *,
    settings: ConnectionSettings | None = None,
    state: str | os.PathLike[str] | None = None,
) -> WaitResult:
    """Block until every check passes (``govern throttle wait`` as a call).

    Raises ThrottleCritical (exit 3) or ThrottleTimeout (exit 75, after ``max_wait``).
    """
    with job_throttler(
        checks, settings=settings, state=state, work="govern throttle wait", where=""
    ) as t:
        waited = t.pause()
        return WaitResult(waited, list(t.holds))
