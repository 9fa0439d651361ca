"""Printing for commands: JSON contracts, rich tables on a terminal, warnings on stderr.

rich is imported lazily: it costs tens of milliseconds, and ``govern run`` has to
start fast.
"""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def print_json(document: Any, stream: IO[str] | None = None) -> None:
    """Pretty JSON with a trailing newline; numbers stay numbers."""
    out = stream or sys.stdout
    json.dump(document, out, indent=2, sort_keys=False, ensure_ascii=False, default=str)
    out.write("\n")


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def warn(message: str) -> None:
    """``govern: warning: …`` on stderr, one line."""
    print(f"govern: warning: {message}", file=sys.stderr, flush=True)


def info(message: str) -> None:
    print(f"govern: {message}", file=sys.stderr, flush=True)


def is_terminal(stream: IO[str] | None = None) -> bool:
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())
