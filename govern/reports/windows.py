"""Blind windows: when ``govern run`` had the slow log off (or its threshold raised).

``govern history --json`` (the ``govern.run.history`` document) exports them as
``windows[]``; the digest report shades them on its load chart so a quiet stretch
that was really a blind one is never read as a quiet server. They reach this module as that
plain data: reading the state store is the run feature's (govern.wrappers.status).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from govern.charts import Window
from govern.errors import UsageError


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
        server=raw.get("server"),
    )


def _host_names(name: str) -> set[str]:
    """``db1.example.com:3306`` -> {``db1.example.com``, ``db1``}: the ways a label names it."""
    host = name.strip().lower().rsplit(":", 1)[0] if ":" in name else name.strip().lower()
    return {name.strip().lower(), host, host.split(".", 1)[0]}


def of_hosts(windows: Sequence[Window], hosts: Sequence[str]) -> list[Window]:
    """The windows of the servers a digest's ``--host`` labels name (a label matches a
    server's ``hostname:port``, its host name, or the host name's first part); every window
    when the digest names no server."""
    if not hosts:
        return list(windows)
    wanted = set().union(*(_host_names(h) for h in hosts))
    return [w for w in windows if w.server is None or _host_names(w.server) & wanted]


def grouped(windows: Sequence[Window], gap: float) -> list[Window]:
    """Windows that overlap or lie within ``gap`` seconds of each other as one window: on a
    chart whose buckets are ``gap`` long they cannot be told apart anyway."""
    groups: list[list[Window]] = []
    end = float("-inf")
    for w in sorted(windows, key=lambda w: w.start):
        w_end = float("inf") if w.end is None else w.end
        if groups and w.start <= end + gap:
            groups[-1].append(w)
            end = max(end, w_end)
        else:
            groups.append([w])
            end = w_end
    return [_merge(group) for group in groups]


def _merge(group: list[Window]) -> Window:
    if len(group) == 1:
        return group[0]
    ends = [w.end for w in group]
    names = [w.label.removeprefix("blind: ") for w in group]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    servers = sorted({w.server for w in group if w.server})
    return Window(
        start=group[0].start,
        end=None if None in ends else max(e for e in ends if e is not None),
        label=f"blind: {len(group)} runs",
        detail=f"govern runs {shown}" + (f" on {', '.join(servers)}" if servers else ""),
        server=servers[0] if len(servers) == 1 else None,
    )


def chart_windows(raws: Iterable[dict[str, Any]], source: str) -> list[Window]:
    """``windows[]`` entries (of a saved history, or govern.wrappers.status.recorded_windows)."""
    try:
        return [window(raw) for raw in raws]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}: a blind window without a valid {exc}") from None


def windows_from_history(document: dict[str, Any], source: str = "history") -> list[Window]:
    return chart_windows(document.get("windows") or [], source)


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
