"""The throttler: polls its checks at a fixed interval, holds while any holds, stops on critical.

Modelled on gh-ost's throttler: one concern (should the work go on now?), every
reason named. Work calls :meth:`Throttler.pause` between batches; it costs a
clock read until the interval has passed, then one poll of every check. While a
check holds, ``pause`` blocks, polling again each interval; a critical check
raises :class:`ThrottleCritical` (the batch just done stays done); more than
``max_wait`` seconds held in total raises :class:`ThrottleTimeout`.

Every hold is recorded: one :class:`Hold` per check per stretch of holding,
with its start, end, reason and the worst value seen, in memory and in the
:class:`HoldLog` given (the state store: docs/design/throttling.md, "Holds").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Protocol

from govern import units
from govern.errors import EXIT_SERVER, GovernError
from govern.throttle.checks import Check, Reading

#: Exit code of work stopped by ``max_wait`` (EX_TEMPFAIL: try again later).
EXIT_TIMEOUT = 75
#: Exit code of work stopped by a critical check: the server is in trouble.
EXIT_CRITICAL = EXIT_SERVER
DEFAULT_INTERVAL = 1.0


@dataclasses.dataclass
class Hold:
    """One check holding (or firing, when critical) from ``started`` to ``ended`` (epoch s)."""

    key: str
    kind: str
    reason: str
    started: float
    ended: float | None = None
    value: float | None = None
    bound: float | None = None
    critical: bool = False

    @property
    def seconds(self) -> float:
        return max((self.ended if self.ended is not None else time.time()) - self.started, 0.0)

    def worse(self, reading: Reading) -> None:
        """Keep the worst figure of the stretch (and the reason that goes with it)."""
        if reading.value is not None and (self.value is None or reading.value > self.value):
            self.value = reading.value
            self.reason = reading.reason

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.kind,
            "key": self.key,
            "reason": self.reason,
            "value": self.value,
            "bound": self.bound,
            "critical": self.critical,
            "started_at": utc_iso(self.started),
            "ended_at": None if self.ended is None else utc_iso(self.ended),
            "seconds": None if self.ended is None else round(self.seconds, 3),
        }


def utc_iso(epoch: float) -> str:
    """Epoch seconds as the state store writes times: ISO 8601 UTC with microseconds."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds")


class HoldLog(Protocol):
    """Where holds are recorded as they open and close (the state store, a test list)."""

    def opened(self, hold: Hold) -> None: ...

    def closed(self, hold: Hold) -> None: ...


class ThrottleStop(GovernError):
    """The throttler stopped the work; ``reason`` says why."""

    #: What the work had done when it stopped (a BatchResult, a ChunkResult), set by it.
    result: Any = None

    def __init__(self, message: str, *, exit_code: int, reason: str) -> None:
        super().__init__(message, exit_code=exit_code)
        self.reason = reason


class ThrottleCritical(ThrottleStop):
    """A critical check fired (exit 3)."""


class ThrottleTimeout(ThrottleStop):
    """Held longer than ``max_wait`` in total (exit 75)."""


class Throttler:
    """Decides, between batches, whether the work goes on; see the module docstring."""

    def __init__(
        self,
        checks: Iterable[Check],
        *,
        interval: float = DEFAULT_INTERVAL,
        max_wait: float | None = None,
        log: HoldLog | None = None,
        notify: Callable[[str], None] | None = None,
        name: str = "throttle",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.checks = list(checks)
        self.name = name
        #: every check's reading at the last poll
        self.readings: list[Reading] = []
        self.interval = interval
        self.max_wait = max_wait
        self.log = log
        self.notify = notify
        self.holds: list[Hold] = []
        self._clock = clock
        self._sleep = sleep
        self._open: dict[str, Hold] = {}
        self._last_poll: float | None = None
        self._holding: list[Reading] = []
        self._held_total = 0.0
        self._held_since: float | None = None
        self._polls = 0

    # --- questions --------------------------------------------------------------------
    @property
    def holding(self) -> list[Reading]:
        """The readings that held at the last poll (empty: go)."""
        return list(self._holding)

    @property
    def held_seconds(self) -> float:
        """Time spent holding so far (any check), including a hold still open."""
        ongoing = self._clock() - self._held_since if self._held_since is not None else 0.0
        return self._held_total + ongoing

    @property
    def polls(self) -> int:
        return self._polls

    # --- polling ----------------------------------------------------------------------
    def poll(self, *, force: bool = False) -> list[Reading]:
        """Read every check when the interval has passed (or ``force``); return what holds.

        Raises ThrottleCritical when a critical check fires (its hold is recorded).
        """
        now = self._clock()
        if not force and self._last_poll is not None and now - self._last_poll < self.interval:
            return self.holding
        self._last_poll = now
        self._polls += 1
        readings = [check.read() for check in self.checks]
        self.readings = readings
        wall = time.time()
        fired = [r for r in readings if r.critical]
        if fired:
            self._critical(fired[0], wall)
        holding = [r for r in readings if r.holds]
        for reading in holding:
            hold = self._open.get(reading.key)
            if hold is None:
                self._begin(reading, wall)
            else:
                hold.worse(reading)
        current = {r.key for r in holding}
        for key in [k for k in self._open if k not in current]:
            self._end(key, wall)
        if holding and self._held_since is None:
            self._held_since = now
        elif not holding and self._held_since is not None:
            held = now - self._held_since
            self._held_total += held
            self._held_since = None
            self._say(f"going on after holding {units.duration(held, 'spaced')}")
        self._holding = holding
        return self.holding

    def pause(self) -> float:
        """Block while a check holds; return the seconds blocked.

        Raises ThrottleCritical (a critical check fired) or ThrottleTimeout (held
        more than ``max_wait`` in total): stop the work cleanly where it is.
        """
        started = self._clock()
        holding = self.poll()
        while holding:
            if self.max_wait is not None and self.held_seconds >= self.max_wait:
                self._timeout(holding[0])
            wait = self.interval
            if self.max_wait is not None:
                wait = min(wait, max(self.max_wait - self.held_seconds, 0.0) + 0.001)
            self._sleep(wait)
            holding = self.poll(force=True)
        return self._clock() - started

    def close(self) -> None:
        """End the holds still open (the work is over) and close the checks' connections."""
        self.close_holds()
        for check in self.checks:
            check.close()
        close_log = getattr(self.log, "close", None)
        if close_log is not None:
            close_log()

    def __enter__(self) -> Throttler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- holds ------------------------------------------------------------------------
    def _begin(self, reading: Reading, wall: float) -> Hold:
        hold = Hold(
            reading.key,
            reading.kind,
            reading.reason,
            started=wall,
            value=reading.value,
            bound=reading.bound,
            critical=reading.critical,
        )
        self._open[reading.key] = hold
        self.holds.append(hold)
        if self.log is not None:
            self.log.opened(hold)
        if not reading.critical:
            self._say(f"holding: {reading.reason}")
        return hold

    def _end(self, key: str, wall: float) -> None:
        hold = self._open.pop(key)
        hold.ended = max(wall, hold.started)
        if self.log is not None:
            self.log.closed(hold)

    def _critical(self, reading: Reading, wall: float) -> None:
        self._begin(reading, wall)
        self.close_holds()
        raise ThrottleCritical(
            f"critical: {reading.reason}: stopped", exit_code=EXIT_CRITICAL, reason=reading.reason
        )

    def _timeout(self, reading: Reading) -> None:
        waited = self.held_seconds
        self.close_holds()
        raise ThrottleTimeout(
            f"held {units.duration(waited, 'spaced')} in total, max_wait"
            f" {units.duration(self.max_wait, 'spaced')} reached"
            f" (last reason: {reading.reason}): stopped",
            exit_code=EXIT_TIMEOUT,
            reason=reading.reason,
        )

    def close_holds(self) -> None:
        """End every open hold now (the work stops holding, whatever the checks say)."""
        wall = time.time()
        for key in list(self._open):
            self._end(key, wall)
        if self._held_since is not None:
            self._held_total += self._clock() - self._held_since
            self._held_since = None
        self._holding = []

    def _say(self, message: str) -> None:
        if self.notify is not None:
            self.notify(f"{self.name}: {message}")

    # --- reporting --------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """``held_s``, ``holds`` and seconds held ``by_check``: the ``throttle`` member of
        the load and chunk reports (docs/json.md)."""
        by_check: dict[str, float] = {}
        for hold in self.holds:
            by_check[hold.kind] = round(by_check.get(hold.kind, 0.0) + hold.seconds, 3)
        return {
            "interval_s": self.interval,
            "max_wait_s": self.max_wait,
            "checks": [check.key for check in self.checks],
            "polls": self._polls,
            "held_s": round(self.held_seconds, 3),
            "by_check": by_check,
            "holds": [hold.to_json() for hold in self.holds],
        }
