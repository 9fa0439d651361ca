"""Shared by the scheduler tests: write catalogs, read the history back."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from govern.state import StateStore
from schedulers.history import History


def write_catalog(folder: Path, body: str, name: str = "summaries.toml") -> Path:
    """A catalog file from an indented TOML snippet."""
    path = folder / name
    path.write_text(textwrap.dedent(body).lstrip())
    return path


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
