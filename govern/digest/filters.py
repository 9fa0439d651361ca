"""``--filter``, ``--since`` and ``--until``: which events a digest counts.

Filters (repeatable) are ``KEY=GLOB``, ``KEY!=GLOB`` or ``KEY~REGEX``. KEY is
``db``, ``user``, ``host`` (the client's), ``fingerprint`` or ``id`` (a query
ID or its first hex digits). Several positive filters on one key are
alternatives (``db=a --filter db=b``: either); everything else must hold.

Times are what the log says (``# Time:``, the server's clock, no zone):
``--since 2026-11-21 22:40``, ``--since 261121 22:40:00``, or a duration back
from now, ``--since 2h`` (s, m, h, d, w), as pt-query-digest does.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from dataclasses import dataclass, field

from govern.errors import UsageError
from govern.fingerprint import decode, query_id
from govern.units import parse_duration

KEYS = ("db", "user", "host", "fingerprint", "id")
_FILTER = re.compile(r"^(db|user|host|fingerprint|id)\s*(!=|=|~)\s*(.*)$", re.S)


@dataclass(frozen=True)
class Condition:
    key: str
    operator: str  # "=", "!=", "~"
    pattern: str

    def matches(self, value: str | None) -> bool:
        text = "" if value is None else value
        if self.operator == "~":
            return re.search(self.pattern, text) is not None
        if self.key == "id":
            hit = text.upper().startswith(self.pattern.upper()) or text[-16:].upper().startswith(
                self.pattern.upper()
            )
        else:
            hit = fnmatch.fnmatchcase(text, self.pattern)
        return hit if self.operator == "=" else not hit


@dataclass(frozen=True)
class Filters:
    """The parsed ``--filter`` options; picklable, so workers get them."""

    conditions: tuple[Condition, ...] = field(default_factory=tuple)

    @property
    def on_events(self) -> bool:
        return any(c.key in ("db", "user", "host") for c in self.conditions)

    @property
    def on_classes(self) -> bool:
        return any(c.key in ("fingerprint", "id") for c in self.conditions)

    @property
    def needs_db(self) -> bool:
        return any(c.key == "db" for c in self.conditions)

    def _holds(self, values: dict[str, str | None], keys: tuple[str, ...]) -> bool:
        for key in keys:
            relevant = [c for c in self.conditions if c.key == key]
            positive = [c for c in relevant if c.operator != "!="]
            if positive and not any(c.matches(values[key]) for c in positive):
                return False
            if not all(c.matches(values[key]) for c in relevant if c.operator == "!="):
                return False
        return True

    def keep_event(self, db: str | None, user: str | None, host: str | None) -> bool:
        return self._holds({"db": db, "user": user, "host": host}, ("db", "user", "host"))

    def keep_class(self, fingerprint: bytes) -> bool:
        values: dict[str, str | None] = {"fingerprint": decode(fingerprint)}
        values["id"] = query_id(fingerprint) if any(c.key == "id" for c in self.conditions) else ""
        return self._holds(values, ("fingerprint", "id"))


def parse_filters(texts: tuple[str, ...] | list[str]) -> Filters | None:
    conditions = []
    for text in texts:
        match = _FILTER.match(text.strip())
        if not match:
            raise UsageError(
                f"--filter {text!r}: expected KEY=GLOB, KEY!=GLOB or KEY~REGEX "
                f"with KEY one of {', '.join(KEYS)}"
            )
        key, operator, pattern = match.groups()
        if operator == "~":
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--filter {text!r}: bad regular expression: {exc}") from None
        conditions.append(Condition(key, operator, pattern))
    return Filters(tuple(conditions)) if conditions else None


def parse_time(option: str, text: str, now: dt.datetime | None = None) -> str:
    """A ``--since``/``--until`` value as ``YYYY-MM-DD HH:MM:SS`` (log time)."""
    value = text.strip()
    try:  # a duration back from now ends with its unit; a date never does
        back = parse_duration(value) if value[-1:].isalpha() else None
    except ValueError:
        back = None
    if back is not None:
        moment = (now or dt.datetime.now()) - dt.timedelta(seconds=back)
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    for layout in (
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d",
        "%y%m%d %H:%M:%S",
    ):
        try:
            return dt.datetime.strptime(value, layout).strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:
            continue
    raise UsageError(
        f"{option} {text!r}: expected YYYY-MM-DD[ HH:MM[:SS]], YYMMDD HH:MM:SS "
        "or a duration like 30m, 2h, 7d"
    )
