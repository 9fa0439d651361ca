"""Typed access to a parsed catalog that turns every mistake into one ``file:line: message``."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from govern.errors import ConfigError
from govern.schedulers.catalog.model import KEYS
from govern.tomllines import key_lines, line_of
from govern.units import parse_duration


class Reader:
    """Typed access to the parsed TOML that turns every mistake into ``file:line: message``."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)

    def fail(self, message: str, *where: str) -> ConfigError:
        return ConfigError(f"{self.path}:{line_of(self.lines, *where)}: {message}")

    def line(self, *where: str) -> int:
        return line_of(self.lines, *where)

    def table(self, data: Mapping[str, Any], kind: str, *where: str) -> Mapping[str, Any]:
        """A sub-table, checking its keys against the known ones (with a suggestion)."""
        if not isinstance(data, Mapping):
            raise self.fail(f"[{'.'.join(where)}] must be a table", *where)
        known = KEYS[kind]
        for key in data:
            if key == "password" and "defaults_file" in known:
                raise self.fail(
                    "a password does not belong in the catalog: use defaults_file (a 0600 option file)",
                    *where,
                    key,
                )
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                place = f"[{'.'.join(where)}]" if where else "the catalog"
                raise self.fail(f"unknown key {key!r} in {place}{hint}", *where, key)
        return data

    def string(self, data: Mapping[str, Any], key: str, *where: str) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{key} must be a string", *where, key)
        return value

    def number(
        self, data: Mapping[str, Any], key: str, default: float, *where: str, minimum: float = 0
    ) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
            raise self.fail(f"{key} must be a number >= {minimum:g}, got {value!r}", *where, key)
        return float(value)

    def integer(
        self, data: Mapping[str, Any], key: str, default: int, *where: str, minimum: int = 0
    ) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"{key} must be an integer >= {minimum}, got {value!r}", *where, key)
        return value

    def boolean(self, data: Mapping[str, Any], key: str, default: bool, *where: str) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"{key} must be true or false, got {value!r}", *where, key)
        return value

    def duration(
        self, data: Mapping[str, Any], key: str, default: float | None, *where: str
    ) -> float | None:
        value = data.get(key)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise self.fail(f"{key}: {exc}", *where, key) from None

    def choice(
        self, data: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], *where: str
    ) -> str:
        value = data.get(key, default)
        if value not in choices:
            raise self.fail(
                f"{key} must be one of {', '.join(choices)}; got {value!r}", *where, key
            )
        return str(value)

    def names(self, data: Mapping[str, Any], key: str, *where: str) -> tuple[str, ...] | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{key} must be a list of names", *where, key)
        return tuple(value)
