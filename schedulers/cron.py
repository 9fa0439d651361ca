"""When nights start: a crontab line in a named timezone, read by APScheduler's CronTrigger.

The catalog checks its [schedule] with :func:`make_trigger`, `govern schedule plan` starts at
:func:`next_fire_time`, and the service (service.py) fires on the same trigger. Plain strings in,
so the catalog's model and reader can use it without importing the service.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def make_trigger(cron: str, timezone: str) -> Any:
    """A CronTrigger from a crontab line in a named timezone (ValueError, LookupError)."""
    from zoneinfo import ZoneInfo

    from apscheduler.triggers.cron import CronTrigger

    return CronTrigger.from_crontab(cron, timezone=ZoneInfo(timezone))


def next_fire_time(cron: str, timezone: str, now: datetime | None = None) -> datetime:
    """When the next night starts after ``now``."""
    current = now or datetime.now().astimezone()
    fire: datetime | None = make_trigger(cron, timezone).get_next_fire_time(None, current)
    return fire or current


def local_timezone() -> str:
    """This machine's timezone name, the default of a [schedule] without one."""
    from tzlocal import get_localzone_name

    return get_localzone_name() or "UTC"
