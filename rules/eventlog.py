"""Small slow logs written as SQL: the docstring examples of the digest rules.

A digest rule's Anti-pattern and Best practice are workloads, not single
statements. In a docstring example, ``-- events: {…}`` (a TOML inline table)
before a statement says how the application ran it; the block becomes a MariaDB
slow log (long_query_time = 0), which the tests digest and check like any log::

    -- events: {connection = 7, times = 300, rows = 1}
    INSERT INTO events (user_id, kind) VALUES ({n}, 'click');

Keys: ``connection`` (thread id, default 1), ``times`` (back to back, default 1;
``{n}`` in the statement counts 1, 2, …), ``query_time`` (seconds, default
0.0002), ``rows`` (rows sent by a read, affected by a write; default 1),
``examined`` (default: ``rows``), ``qc_hit`` (default false). Every event is
``every`` seconds after the one before (default 1). ``-- repeat: N`` … ``-- end``
around statements repeats them (a loop with several statements in its body).
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DIRECTIVE = "-- events:"
_START = dt.datetime(2025, 1, 6, 9, 0, 0)
_KEYS = {"connection", "times", "query_time", "rows", "examined", "qc_hit", "every"}


def is_event_example(sql: str) -> bool:
    return any(line.strip().startswith(DIRECTIVE) for line in sql.splitlines())


@dataclass
class _Step:
    sql: str
    settings: dict[str, Any]


def _steps(sql: str) -> list[_Step]:
    """Statements with their settings; ``-- repeat: N`` blocks unrolled."""
    stack: list[tuple[int, list[_Step]]] = [(1, [])]
    settings: dict[str, Any] = {}
    lines: list[str] = []
    for raw in sql.splitlines():
        line = raw.strip()
        if line.startswith(DIRECTIVE):
            settings = tomllib.loads("x = " + line[len(DIRECTIVE) :].strip())["x"]
            unknown = set(settings) - _KEYS
            if unknown:
                raise ValueError(f"unknown event setting {sorted(unknown)[0]!r} in {line!r}")
        elif line.startswith("-- repeat:"):
            stack.append((int(line.split(":", 1)[1]), []))
        elif line == "-- end":
            times, body = stack.pop()
            stack[-1][1].extend(body * times)
        elif line.startswith("--") or not line:
            continue
        else:
            lines.append(raw)
            if line.endswith(";"):
                stack[-1][1].append(_Step("\n".join(lines).rstrip().rstrip(";"), settings))
                lines, settings = [], {}
    return stack[0][1]


def events(sql: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(connection, statement, settings) for every event, in order."""
    counters: dict[int, int] = {}
    for step in _steps(sql):
        times = int(step.settings.get("times", 1))
        key = id(step.sql)
        for _ in range(times):
            counters[key] = counters.get(key, 0) + 1
            text = step.sql.replace("{n}", str(counters[key]))
            yield int(step.settings.get("connection", 1)), text, step.settings


def slow_log(sql: str) -> bytes:
    """The example as a MariaDB slow log."""
    out: list[str] = []
    clock = _START
    for connection, text, settings in events(sql):
        rows = int(settings.get("rows", 1))
        examined = int(settings.get("examined", rows))
        verb = text.lstrip().split(None, 1)[0].upper() if text.strip() else ""
        write = verb in ("INSERT", "REPLACE", "UPDATE", "DELETE")
        qc_hit = "Yes" if settings.get("qc_hit") else "No"
        out.append(
            f"# Time: {clock:%y%m%d %H:%M:%S}\n"
            f"# User@Host: app[app] @ localhost []\n"
            f"# Thread_id: {connection}  Schema: app  QC_hit: {qc_hit}\n"
            f"# Query_time: {float(settings.get('query_time', 0.0002)):.6f}  "
            f"Lock_time: 0.000010  Rows_sent: {0 if write else rows}  "
            f"Rows_examined: {examined}\n"
            f"# Rows_affected: {rows if write else 0}  Bytes_sent: {60 + 40 * rows}\n"
            f"SET timestamp={int(clock.timestamp())};\n{text};\n"
        )
        clock += dt.timedelta(seconds=float(settings.get("every", 1)))
    return "".join(out).encode()
