"""Which checks a throttler runs: one vocabulary for options, config files, catalogs and jobs.

The same keys everywhere: ``--throttle KEY=VALUE`` (repeatable) on the commands,
``govern throttle wait KEY=VALUE …``, a ``[throttle]`` table in ``govern.toml``
(``[tool.govern.throttle]`` in pyproject.toml) or in a scheduler catalog::

    max_lag = "2s"                       # hold while any replica lags more
    replicas = ["db2:3306", "db3.cnf"]   # default: found from the primary
    heartbeat_table = "percona.heartbeat"
    heartbeat_utc = false
    max_load = { Threads_running = 25 }  # on the command line: max_load=Threads_running=25
    critical_load = { Threads_running = 200 }
    query = "SELECT COUNT(*) FROM ops.maintenance_window WHERE NOW() BETWEEN starts AND ends"
    flag_file = "/run/govern/hold"
    critical_flag_file = "/run/govern/stop"
    interval = "1s"
    max_wait = "2h"

Where the checks come from, first found wins whole: the command's ``--throttle``
options, then ``$GOVERN_THROTTLE`` (set by ``govern run`` and the scheduler for
their jobs: :mod:`govern.throttle.handoff`), then the nearest config file.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from govern.errors import ConfigError, GovernError, UsageError
from govern.throttle.lag import DEFAULT_HEARTBEAT_TABLE
from govern.throttle.throttler import DEFAULT_INTERVAL
from govern.units import parse_duration

KEYS = (
    "max_lag",
    "replicas",
    "heartbeat_table",
    "heartbeat_utc",
    "max_load",
    "critical_load",
    "query",
    "flag_file",
    "critical_flag_file",
    "interval",
    "max_wait",
)
_ALIASES = {"replica": "replicas"}
_REPEATED = ("replicas", "max_load", "critical_load")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TABLE = re.compile(r"[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+")
CONFIG_NAMES = ("govern.toml", "pyproject.toml")


@dataclasses.dataclass(frozen=True)
class ThrottleSpec:
    """The checks and their settings, validated."""

    max_lag: float | None = None
    replicas: tuple[str, ...] = ()
    heartbeat_table: str = DEFAULT_HEARTBEAT_TABLE
    heartbeat_utc: bool = False
    max_load: tuple[tuple[str, float], ...] = ()
    critical_load: tuple[tuple[str, float], ...] = ()
    query: str | None = None
    flag_file: str | None = None
    critical_flag_file: str | None = None
    interval: float = DEFAULT_INTERVAL
    max_wait: float | None = None

    @property
    def has_checks(self) -> bool:
        return bool(
            self.max_lag is not None
            or self.max_load
            or self.critical_load
            or self.query
            or self.flag_file
            or self.critical_flag_file
        )

    @property
    def needs_target(self) -> bool:
        """Does a check read the target server (status, query, or finding its replicas)?"""
        finds_replicas = self.max_lag is not None and not self.replicas
        return bool(finds_replicas or self.max_load or self.critical_load or self.query)

    def describe(self) -> str:
        """The checks as ``KEY=VALUE`` items, for messages."""
        return " ".join(self.items())

    def items(self) -> list[str]:
        out: list[str] = []
        if self.max_lag is not None:
            out.append(f"max_lag={self.max_lag:g}s")
        out.extend(f"replica={r}" for r in self.replicas)
        if self.max_lag is not None and self.heartbeat_table != DEFAULT_HEARTBEAT_TABLE:
            out.append(f"heartbeat_table={self.heartbeat_table}")
        if self.heartbeat_utc:
            out.append("heartbeat_utc=true")
        out.extend(f"max_load={name}={bound:g}" for name, bound in self.max_load)
        out.extend(f"critical_load={name}={bound:g}" for name, bound in self.critical_load)
        if self.query:
            out.append(f"query={self.query}")
        if self.flag_file:
            out.append(f"flag_file={self.flag_file}")
        if self.critical_flag_file:
            out.append(f"critical_flag_file={self.critical_flag_file}")
        if self.interval != DEFAULT_INTERVAL:
            out.append(f"interval={self.interval:g}s")
        if self.max_wait is not None:
            out.append(f"max_wait={self.max_wait:g}s")
        return out

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThrottleSpec:
        values = dict(data)
        values["replicas"] = tuple(values.get("replicas") or ())
        for key in ("max_load", "critical_load"):
            values[key] = tuple((str(n), float(b)) for n, b in values.get(key) or ())
        return cls(**values)


def parse_items(items: Iterable[str], where: str = "--throttle") -> ThrottleSpec:
    """Checks given as ``KEY=VALUE`` texts (``--throttle``; ``govern throttle wait``'s
    arguments, with ``where=""``): errors name the item."""
    values: dict[str, list[Any]] = {}
    given = list(items)
    prefix = f"{where} " if where else ""
    for item in given:
        key, equals, value = item.partition("=")
        name = _key(key)
        if not equals or not value.strip():
            raise UsageError(f"{prefix}{item!r}: expected KEY=VALUE (e.g. max_lag=2s)")
        if name not in KEYS:
            raise UsageError(f"{prefix}{item!r}: unknown check {key!r}{_suggest(key)}")
        if name in values and name not in _REPEATED:
            raise UsageError(f"{prefix}{item!r}: {name} is given twice")
        values.setdefault(name, []).append(value.strip())

    def fail(key: str, message: str) -> GovernError:
        return UsageError(f"{prefix}{key}: {message}")

    return _build(values, fail, base=Path.cwd())


def from_table(data: Any, fail: Callable[[str, str], GovernError], *, base: Path) -> ThrottleSpec:
    """A ``[throttle]`` TOML table; ``fail(key, message)`` makes the ``file:line`` error."""
    if not isinstance(data, Mapping):
        raise fail("", "[throttle] must be a table")
    values: dict[str, list[Any]] = {}
    for key, value in data.items():
        name = _key(str(key))
        if name not in KEYS:
            raise fail(str(key), f"unknown key {key!r} in [throttle]{_suggest(str(key))}")
        if name in ("max_load", "critical_load") and isinstance(value, Mapping):
            values[name] = [f"{variable}={bound}" for variable, bound in value.items()]
        elif name == "replicas" and isinstance(value, list):
            values[name] = list(value)
        else:
            values[name] = [value]
    return _build(values, fail, base=base)


def _key(text: str) -> str:
    name = text.strip().lower().replace("-", "_")
    return _ALIASES.get(name, name)


def _suggest(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(_key(key), KEYS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _build(
    values: Mapping[str, list[Any]],
    fail: Callable[[str, str], GovernError],
    *,
    base: Path,
) -> ThrottleSpec:
    def one(key: str) -> Any:
        return values[key][0] if key in values else None

    def duration(key: str, minimum: float = 0.0) -> float | None:
        value = one(key)
        if value is None:
            return None
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise fail(key, str(exc)) from None
        if seconds < minimum:
            raise fail(key, f"must be at least {minimum:g} s, got {value!r}")
        return seconds

    def text(key: str) -> str | None:
        value = one(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise fail(key, f"must be a non-empty string, got {value!r}")
        return value.strip() if isinstance(value, str) else None

    def path(key: str) -> str | None:
        value = text(key)
        return None if value is None else str(base / Path(value).expanduser())

    def bounds(key: str) -> tuple[tuple[str, float], ...]:
        pairs: list[tuple[str, float]] = []
        for entry in values.get(key, []):
            for part in str(entry).split(","):
                name, equals, number = part.strip().partition("=")
                if not equals or not _VARIABLE.fullmatch(name.strip()):
                    raise fail(key, f"expected STATUS_VARIABLE=NUMBER, got {part.strip()!r}")
                try:
                    bound = float(number)
                except ValueError:
                    raise fail(key, f"{name.strip()}: {number.strip()!r} is not a number") from None
                if bound < 0:
                    raise fail(key, f"{name.strip()}: the bound cannot be negative")
                pairs.append((name.strip(), bound))
        return tuple(pairs)

    max_lag = duration("max_lag")
    replicas = tuple(str(r).strip() for r in values.get("replicas", []))
    if any(not r or not isinstance(r, str) for r in replicas):
        raise fail("replicas", "must be HOST[:PORT] or option file names")
    table = text("heartbeat_table") or DEFAULT_HEARTBEAT_TABLE
    if not _TABLE.fullmatch(table):
        raise fail("heartbeat_table", f"must be schema.table, got {table!r}")
    utc = one("heartbeat_utc")
    if isinstance(utc, str):
        if utc.lower() not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
            raise fail("heartbeat_utc", f"must be true or false, got {utc!r}")
        utc = utc.lower() in ("true", "yes", "1", "on")
    if utc is not None and not isinstance(utc, bool):
        raise fail("heartbeat_utc", f"must be true or false, got {utc!r}")
    if (replicas or "heartbeat_table" in values or utc is not None) and max_lag is None:
        raise fail("max_lag", "replicas and heartbeat settings need max_lag")
    query = text("query")
    if query is not None:
        from govern.throttle.checks import read_only_query

        try:
            query = read_only_query(query, "query")
        except UsageError as exc:
            raise fail("query", exc.message.removeprefix("query: ")) from None
    interval = duration("interval", minimum=0.01)
    return ThrottleSpec(
        max_lag=max_lag,
        replicas=tuple(
            str(base / r) if ("/" in r or r.endswith(".cnf")) and not r.startswith("/") else r
            for r in replicas
        ),
        heartbeat_table=table,
        heartbeat_utc=bool(utc),
        max_load=bounds("max_load"),
        critical_load=bounds("critical_load"),
        query=query,
        flag_file=path("flag_file"),
        critical_flag_file=path("critical_flag_file"),
        interval=DEFAULT_INTERVAL if interval is None else interval,
        max_wait=duration("max_wait"),
    )


# --- config files ---------------------------------------------------------------------------
def config_spec(directory: Path | None = None) -> ThrottleSpec | None:
    """The ``[throttle]`` table of the nearest ``govern.toml`` (or pyproject.toml's
    ``[tool.govern.throttle]``) at or above ``directory``; None when there is none."""
    folder = (directory or Path.cwd()).resolve()
    for candidate_dir in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            path = candidate_dir / name
            if path.is_file():
                found = _read_config(path)
                if found is not None:
                    return found if found.has_checks else None
    return None


def _read_config(path: Path) -> ThrottleSpec | None:
    from govern.tomllines import key_lines, line_of

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    prefix: tuple[str, ...] = ()
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if not isinstance(tool, dict) or not isinstance(tool.get("govern"), dict):
            return None
        data, prefix = tool["govern"], ("tool", "govern")
    if "throttle" not in data:
        return ThrottleSpec()
    lines = key_lines(text)

    def fail(key: str, message: str) -> GovernError:
        where = (*prefix, "throttle", key) if key else (*prefix, "throttle")
        return ConfigError(f"{path}:{line_of(lines, *where)}: {message}")

    return from_table(data["throttle"], fail, base=path.parent)
