"""Blind windows: when ``govern run`` had the slow log off (or its threshold raised).

``govern history --json`` (the ``govern.run.history`` document) exports them as
``windows[]``; the digest report shades them on its load chart so a quiet stretch
that was really a blind one is never read as a quiet server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from govern.charts import Window
from govern.errors import UsageError
from govern.state import StateStore


def epoch(stamp: str) -> float:
    """ISO 8601 to epoch seconds; a stamp without a zone is UTC (the state store's clock)."""
    moment = datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def window(raw: dict[str, Any]) -> Window:
    """One ``windows[]`` entry of ``govern.run.history`` as a chart window."""
    variable, value = raw.get("variable"), raw.get("value")
    setting = f"{variable} = {value:g}" if isinstance(value, int | float) else str(variable or "")
    where = f" on {raw['server']}" if raw.get("server") else ""
    return Window(
        start=epoch(raw["start"]),
        end=epoch(raw["end"]) if raw.get("end") else None,
        label=f"blind: {raw.get('name') or raw.get('run_id')}",
        detail=f"govern run {raw.get('mode')} mode{where}: {setting}",
    )


def windows_from_history(document: dict[str, Any], source: str = "history") -> list[Window]:
    try:
        return [window(raw) for raw in document.get("windows") or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}: a blind window without a valid {exc}") from None


def windows_from_state(store: StateStore) -> list[Window]:
    """Every blind window this host's ``govern run`` recorded in the state store."""
    from govern.wrappers import journal
    from govern.wrappers.status import window_json

    return [window(raw) for record in journal.history(store) if (raw := window_json(record))]


def windows_from_state_file(path: str | None) -> list[Window]:
    """Windows from the state file at ``path`` (default location if None); none if it is absent.

    Reading never creates a state file: a host that never ran ``govern run`` has no windows.
    """
    from govern.state import default_state_path

    target = Path(path) if path else default_state_path()
    if not target.is_file():
        return []
    with StateStore.open(target) as store:
        return windows_from_state(store)


def load_windows(paths: Iterable[str]) -> list[Window]:
    """Windows from saved ``govern history --json`` files (e.g. from the database host)."""
    found: list[Window] = []
    for path in paths:
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path}: not a govern history document ({exc})") from None
        if not isinstance(document, dict) or document.get("schema") != "govern.run.history":
            raise UsageError(f"{path}: not a govern history document (govern history --json)")
        found.extend(windows_from_history(document, path))
    return found
