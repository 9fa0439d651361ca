"""The summary catalog: a TOML file of jobs and workers, checked whole before anything runs.

* :mod:`~govern.schedulers.catalog.model`: what a catalog holds (frozen dataclasses);
* :mod:`~govern.schedulers.catalog.load`: the file read and checked, one ``file:line`` error;
* :mod:`~govern.schedulers.catalog.reader`: typed access to the TOML that words those errors;
* :mod:`govern.tomllines` (core, shared with the throttle's ``[throttle]`` tables): the line
  each TOML key is on;
* :mod:`~govern.schedulers.catalog.cycles`: dependency cycles;
* :mod:`~govern.schedulers.catalog.deadline`: ``deadline = "06:00"`` or ``"4h"``.
"""

from govern.schedulers.catalog.cycles import find_cycle
from govern.schedulers.catalog.load import load_catalog
from govern.schedulers.catalog.model import (
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

__all__ = [
    "HOOK_EVENTS",
    "KEY_PLACEHOLDER",
    "NAME_RE",
    "POLICIES",
    "WRAP_MODES",
    "Catalog",
    "HookSpec",
    "JobSpec",
    "LagGuard",
    "ReadyWhen",
    "ScheduleSpec",
    "SizingSpec",
    "WorkerSpec",
    "find_cycle",
    "load_catalog",
]
