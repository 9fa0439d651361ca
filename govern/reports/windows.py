"""Blind windows: when ``govern run`` had the slow log off (or its threshold raised); and
holds: when the throttle held batch work back (docs/design/throttling.md, "Holds").

``govern history --json`` (the ``govern.run.history`` document) exports them as
``windows[]`` and ``holds[]``; the digest report shades both on its load chart so a
quiet stretch that was really a blind one is never read as a quiet server, and the
load that made batch work wait is seen beside the wait. They reach this module as that
plain data: reading the state store is the run feature's (govern.wrappers.status).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from govern.charts import Window
from govern.charts.svg import PALETTE
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


#: Holds are shaded in the chart's second colour, apart from the blind windows.
HOLD_COLOUR = PALETTE[2]
#: Reasons a merged hold's tooltip lists (the table and history list them all).
SHOWN_REASONS = 3


def hold_windows(holds: Sequence[dict[str, Any]]) -> list[Window]:
    """Throttle holds as chart windows, one per stretch of overlapping holds (the throttler
    records one per check: a chart of each would overprint)."""
    spans = sorted(
        (
            (epoch(h["started_at"]), epoch(h["ended_at"]) if h.get("ended_at") else None, h)
            for h in holds
        ),
        key=lambda span: span[0],
    )
    merged: list[tuple[float, float | None, list[dict[str, Any]]]] = []
    for start, end, hold in spans:
        if merged and (merged[-1][1] is None or start <= merged[-1][1]):
            first, last, members = merged[-1]
            reach = None if last is None or end is None else max(last, end)
            merged[-1] = (first, reach, [*members, hold])
        else:
            merged.append((start, end, [hold]))
    found = []
    for start, end, members in merged:
        kinds = ", ".join(dict.fromkeys(str(h.get("check")) for h in members))
        lines = [f"{h.get('work')}: {h.get('reason')}" for h in members[:SHOWN_REASONS]]
        if len(members) > SHOWN_REASONS:
            lines.append(f"and {len(members) - SHOWN_REASONS} more holds")
        found.append(Window(start, end, f"held: {kinds}", "\n".join(lines), colour=HOLD_COLOUR))
    return found


def windows_from_history(document: dict[str, Any], source: str = "history") -> list[Window]:
    """The ``windows[]`` and ``holds[]`` of a history document (a saved one, or
    govern.wrappers.status.recorded_history)."""
    try:
        return [window(raw) for raw in document.get("windows") or []] + hold_windows(
            document.get("holds") or []
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}: a blind window or hold without a valid {exc}") from None


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
