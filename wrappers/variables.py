"""The two global variables ``govern run`` may change, and how their values travel.

Values are kept as integers in the variable's own unit (the slow-log switch: 0/1;
``long_query_time``: microseconds), because they are compared (compare-and-swap),
carried bit by bit in user-lock names (:mod:`govern.wrappers.claims`) and written into a
server-side event body: an integer survives all three exactly, a float does not.
"""

from __future__ import annotations

import dataclasses

from govern.connection import Connection, query_one
from govern.server import ServerInfo

#: ``long_query_time`` is clamped to [0, 31536000] s; in microseconds that fits 45 bits.
LONG_QUERY_TIME_MAX_US = 31_536_000 * 1_000_000


@dataclasses.dataclass(frozen=True)
class Variable:
    """A global server variable govern changes, e.g. ``log_slow_query`` or ``long_query_time``."""

    name: str
    #: Short, server-independent name used in lock names: ``slow`` or ``lqt``. Runs that
    #: spell the switch ``slow_query_log`` and ``log_slow_query`` still coordinate.
    code: str
    #: Integer units per value unit (1 for the switch, 1,000,000 for seconds).
    scale: int
    #: Bits needed to carry any value in lock names.
    bits: int

    @property
    def is_switch(self) -> bool:
        return self.scale == 1

    def read(self, conn: Connection) -> int:
        """The current global value, in integer units."""
        row = query_one(conn, f"SELECT ROUND(@@GLOBAL.{self.name} * {self.scale})")
        assert row is not None
        return int(row[0])

    def current_sql(self) -> str:
        """An SQL expression for the current global value in integer units (for event bodies)."""
        return f"ROUND(@@GLOBAL.{self.name} * {self.scale})"

    def literal(self, value: int) -> str:
        """The SQL literal that sets ``value``: ``1``/``0`` or ``10.000000``."""
        if self.is_switch:
            return "1" if value else "0"
        return f"{value // self.scale}.{value % self.scale:06d}"

    def set_sql(self, value: int) -> str:
        return f"SET GLOBAL {self.name} = {self.literal(value)}"

    def show(self, value: int | None) -> str:
        """``ON``/``OFF`` or ``10s``/``0.5s`` for people."""
        if value is None:
            return "?"
        if self.is_switch:
            return "ON" if value else "OFF"
        seconds = f"{self.literal(value)}".rstrip("0").rstrip(".")
        return f"{seconds}s"

    def parse(self, text: str) -> int:
        """``ON``/``OFF``/``1``/``0`` or seconds (``10``, ``0.5``) → integer units."""
        if self.is_switch:
            return 1 if text.strip().upper() in ("ON", "1", "YES", "TRUE") else 0
        return round(float(text) * self.scale)


def slow_log(info: ServerInfo) -> Variable:
    """The slow-log switch under the name this server prefers (``log_slow_query`` on 10.11+)."""
    return Variable(name=info.slow_log_variable, code="slow", scale=1, bits=1)


LONG_QUERY_TIME = Variable(name="long_query_time", code="lqt", scale=1_000_000, bits=45)


def by_name(name: str) -> Variable:
    """The Variable for a name stored in the journal."""
    if name == LONG_QUERY_TIME.name:
        return LONG_QUERY_TIME
    if name in ("log_slow_query", "slow_query_log"):
        return Variable(name=name, code="slow", scale=1, bits=1)
    raise ValueError(f"govern does not govern {name!r}")


def by_code(code: str, info: ServerInfo) -> Variable:
    return LONG_QUERY_TIME if code == LONG_QUERY_TIME.code else slow_log(info)
