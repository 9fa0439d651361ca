"""What every source gives the collector: text or measured classes, and its progress."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from govern.collect.digesting import Aggregate


@dataclass
class Text:
    """Whole records of slow-log text a source read, from one input."""

    data: bytes  # the text is ``data[:size]`` (a read's unfinished tail stays out, uncopied)
    name: str  # the input, as samples name it
    line_base: int = 0
    #: Told the lines of the text once it is digested (the digest counts them anyway).
    lines_read: Callable[[int], None] | None = None
    size: int = -1  # -1: all of ``data``

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = len(self.data)


@dataclass
class Classes:
    """Classes a statistics source measured over an interval ending at ``ts``."""

    ts: str
    aggregate: Aggregate


@dataclass
class Progress:
    """What one read of a source found: problems to report, how far behind it is."""

    budget: int
    problems: list[str] = field(default_factory=list)
    behind: int = 0  # bytes (files) or rows (table) known to be unread
    caught_up: bool = True
    now: dt.datetime | None = None  # the source's clock (a server's NOW()), if it has one


class Source(Protocol):
    """A place statements are read from, with a position that survives restarts."""

    key: str  # stable name in the checkpoint ("file:/var/log/mysql/slow.log", "table", …)
    label: str  # for people

    def restore(self, saved: dict[str, Any] | None) -> None:
        """Continue from a committed position (None: the source is new)."""

    def checkpoint(self) -> dict[str, Any]:
        """The position after everything read so far (JSON)."""
        ...

    def refresh(self, progress: Progress) -> bool:
        """Look before reading (a followed file notices its rotations); True when that
        changed the position, which is then committed before the read."""
        ...

    def read(self, progress: Progress) -> Iterator[Text | Classes]:
        """What is new since the position (after :meth:`refresh`), advancing it as it goes."""
        ...

    def close(self) -> None: ...
