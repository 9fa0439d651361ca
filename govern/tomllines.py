"""Line numbers for keys in a TOML file, so catalog and ``[throttle]`` errors can say
``file:line``.

:mod:`tomllib` reports positions only for syntax errors. A catalog mistake found
later (an unknown dependency, a typo in a key) still deserves the line it is on,
so this reads the text once more and records where each table header and key
sits. It understands what catalogs use: ``[a.b]`` headers (quoted parts too),
``key = value`` and dotted keys, and skips multi-line strings and arrays.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_PART = re.compile(r"""[A-Za-z0-9_-]+|"([^"]*)"|'([^']*)'""")

Path = tuple[str, ...]


def _parts(dotted: str) -> Path:
    parts = []
    for match in _PART.finditer(dotted):
        if match.group(1) is not None:
            parts.append(match.group(1))
        elif match.group(2) is not None:
            parts.append(match.group(2))
        else:
            parts.append(match.group(0))
    return tuple(parts)


def key_lines(text: str) -> dict[Path, int]:
    """``{("jobs", "a"): 12, ("jobs", "a", "sql"): 13, ...}`` (1-based lines)."""
    lines: dict[Path, int] = {}
    table: Path = ()
    skip_until: str | None = None  # closing delimiter of a multi-line value
    depth = 0  # open brackets of a multi-line array
    for number, line in enumerate(text.splitlines(), start=1):
        if skip_until is not None:
            if skip_until in line:
                skip_until = None
            continue
        if depth > 0:
            depth += _bracket_balance(line)
            continue
        header = _HEADER.match(line)
        if header:
            table = _parts(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if not key:
            continue
        path = table + _parts(key.group(1))
        for end in range(len(table) + 1, len(path) + 1):
            lines.setdefault(path[:end], number)
        value = line[key.end() :]
        for quote in ('"""', "'''"):
            if value.count(quote) % 2 == 1:
                skip_until = quote
        if skip_until is None:
            depth = max(_bracket_balance(value), 0)
    return lines


def _bracket_balance(text: str) -> int:
    """Open minus closed brackets outside strings and comments (good enough for arrays)."""
    balance = 0
    quote: str | None = None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "[{":
            balance += 1
        elif ch in "]}":
            balance -= 1
    return balance


def line_of(lines: dict[Path, int], *path: str) -> int:
    """The line of ``path``, else of its nearest enclosing table, else 1."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1
