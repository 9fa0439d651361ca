"""Shared by the scheduler tests: catalog snippets, the CLI in a process, the history read back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from govern.schedulers.history import History
from govern.state import StateStore

#: The ``write_catalog`` fixture (tests/schedule/conftest.py): body, name -> the file.
WriteCatalog = Callable[..., Path]


def worker_table(name: str, defaults_file: Path, concurrency: int = 1, extra: str = "") -> str:
    return f'[workers.{name}]\ndefaults_file = "{defaults_file}"\nconcurrency = {concurrency}\n{extra}\n'


def last_night(state_path: Path) -> dict[str, Any]:
    with StateStore.open(state_path) as store:
        history = History(store)
        ids = history.night_ids(limit=1)
        assert ids, "no night recorded"
        night = history.night(ids[0])
    assert night is not None
    return night


def start_order(night: dict[str, Any]) -> list[str]:
    """Job names in the order their first attempt started (ties: lane order)."""
    ran = [j for j in night["jobs"] if j["start_s"] is not None]
    return [j["name"] for j in sorted(ran, key=lambda j: (j["start_s"], j["lane"]))]


def govern(*args: str, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "govern", *args],
        capture_output=True,
        text=True,
        check=check,
        **kwargs,
    )


def wait_until(condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def gone(pid: int, within: float) -> bool:
    """The process ended within ``within`` seconds."""
    try:
        wait_until(lambda: not _alive(pid), within)
    except AssertionError:
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def govern_process(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """The CLI started in the background, for tests that signal or kill it."""
    return subprocess.Popen(
        [sys.executable, "-m", "govern", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
