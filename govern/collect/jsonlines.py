"""Slow logs wrapped in JSON lines: a CloudWatch Logs export, Docker's or Kubernetes'
json-file logs. Each line is an object; one of its fields (``--json-field message``,
``log``, or a dotted path such as ``event.message``) holds a piece of ordinary
slow-log text: a whole entry (CloudWatch) or one line of it (Docker).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from govern.slowlog import SEPARATOR


@dataclass
class Unwrapped:
    """The slow-log text of whole JSON lines, cut where a record starts."""

    text: bytes
    consumed: int  # bytes of the wrapped input the text comes from
    lines: int  # JSON lines consumed
    #: (line number from the start of the input given, why) for lines that hold no text
    skipped: list[tuple[int, str]] = field(default_factory=list)


def field_path(name: str) -> tuple[str, ...]:
    return tuple(part for part in name.split(".") if part)


def unwrap(raw: bytes, path: tuple[str, ...], *, complete: bool) -> Unwrapped:
    """Unwrap the whole lines of ``raw``. Unless ``complete`` (the input ends here for
    good), the text stops before the last record it starts, which later lines may
    continue, and the wrapped bytes after it are left for the next read."""
    end = raw.rfind(b"\n") + 1
    if complete and end < len(raw) and raw[end:].strip():
        end = len(raw)
    pieces: list[bytes] = []
    starts: list[tuple[int, int]] = []  # (unwrapped offset, wrapped offset) of each line
    skipped: list[tuple[int, str]] = []
    size = position = 0
    number = 0
    while position < end:
        stop = raw.find(b"\n", position, end)
        stop = end if stop < 0 else stop + 1
        number += 1
        line = raw[position:stop]
        starts.append((size, position))
        piece, problem = _field_text(line, path)
        if problem is not None:
            skipped.append((number, problem))
        elif piece:
            pieces.append(piece)
            size += len(piece)
        position = stop
    text = b"".join(pieces)
    if complete:
        return Unwrapped(text, end, number, skipped)
    # Keep whole records only: cut at the last line that starts a record.
    for line_index in range(len(starts) - 1, 0, -1):
        offset, wrapped = starts[line_index]
        if offset >= 2 and text[offset - 2 : offset + 1] == SEPARATOR:
            return Unwrapped(
                text[:offset],
                wrapped,
                line_index,
                [(n, why) for n, why in skipped if n <= line_index],
            )
    return Unwrapped(b"", 0, 0, [])


def _field_text(line: bytes, path: tuple[str, ...]) -> tuple[bytes | None, str | None]:
    """The text a JSON line holds, with a newline at its end; or why it holds none."""
    if not line.strip():
        return None, None
    try:
        value = json.loads(line)
    except ValueError as exc:
        return None, f"not JSON ({exc.args[0].split(':')[0]})"
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None, f"no field {'.'.join(path)}"
        value = value[part]
    if not isinstance(value, str):
        return None, f"field {'.'.join(path)} is not a string"
    text = value.encode("utf-8", "surrogateescape")
    return (text if text.endswith(b"\n") else text + b"\n"), None
