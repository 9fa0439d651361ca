"""Running a collector: once (a cron tick) or as a service on an interval (APScheduler 3.11).

``collect_once`` polls until every source is caught up, committing after each
poll, so a backlog of gigabytes is read in bounded polls and a kill in the middle
loses no work already committed. ``serve`` polls every ``interval`` seconds with
APScheduler (``max_instances = 1``: a slow poll is never overlapped; ``coalesce``:
polls missed meanwhile run once); SIGTERM lets the running poll finish and commit.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from govern.collect.collector import Collector, PollReport
from govern.errors import GovernError
from govern.output import info

#: Polls of ``collect_once`` at most (each reads up to the budget): a guard, not a limit
#: anyone should reach.
MAX_POLLS = 100_000
#: Polls in a row that read nothing though a source is behind: ``collect_once`` stops.
IDLE_POLLS = 5


def collect_once(collector: Collector, on_poll: Callable[[PollReport], None]) -> list[PollReport]:
    """Poll until the sources are caught up (the open collector stays open)."""
    reports = []
    idle = 0
    for _ in range(MAX_POLLS):
        report = collector.poll(commit=True)
        reports.append(report)
        on_poll(report)
        if report.caught_up:
            break
        # Not caught up, yet nothing read: a file replaced while it was opened. Again,
        # a few times, not forever.
        idle = 0 if report.events or any(s.bytes for s in report.sources) else idle + 1
        if idle >= IDLE_POLLS:
            break
    return reports


def serve(
    collector: Collector,
    interval: float,
    on_poll: Callable[[PollReport], None],
    *,
    stop: threading.Event | None = None,
) -> None:
    """Poll every ``interval`` seconds until SIGTERM, SIGINT or ``stop``; a failed poll
    (a server away) is reported and tried again at the next one."""
    stop = stop or threading.Event()

    def poll() -> None:
        try:
            # A source behind by more than a poll's budget is read on at once, not at the
            # next tick.
            while not stop.is_set():
                report = collector.poll()
                on_poll(report)
                if report.caught_up:
                    break
        except GovernError as exc:
            info(f"poll failed: {exc.message} (trying again in {interval:g}s)")
            try:
                collector.reload()  # what the failed poll read is read again
            except GovernError as again:
                info(f"cannot reload the checkpoint: {again.message}")

    def on_error(event: JobExecutionEvent) -> None:
        info(f"poll failed inside govern: {event.exception!r}")

    # A poll longer than the interval makes APScheduler skip the next one and say so on
    # the root logger; that is the intended behaviour, and failures come through on_error.
    logging.getLogger("apscheduler").setLevel(logging.CRITICAL)
    scheduler = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(max_workers=1)},
        job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
    )
    scheduler.add_listener(on_error, EVENT_JOB_ERROR)
    scheduler.add_job(poll, "interval", seconds=interval, id="poll", next_run_time=_now())

    def on_signal(signum: int, frame: FrameType | None) -> None:
        info(f"{signal.Signals(signum).name}: finishing the running poll")
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    scheduler.start()
    try:
        while not stop.wait(timeout=3600):
            pass
    finally:
        scheduler.shutdown(wait=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _now() -> object:
    from datetime import datetime

    return datetime.now().astimezone()
