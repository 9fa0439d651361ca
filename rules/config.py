"""Rule and lint settings from ``govern.toml`` or ``[tool.govern]`` in pyproject.toml.

The nearest file to the SQL file wins, whole (no merging with files further up),
as in ruff: a directory can carry its own policy. In a directory that has both,
``govern.toml`` wins. Keys (``govern.toml`` has them at top level)::

    [tool.govern]
    target = "mariadb-10.11"

    [tool.govern.rules]             # shared by govern lint and the digest rules
    select = ["QC", "BATCH"]        # IDs or prefixes; default: all
    ignore = ["BATCH003"]
    per-class-ignores = { "3A99CC42AEDCCFCD" = ["QC001"] }

    [tool.govern.rules.QC005]       # one table per rule: its options and severity
    tables = ["daily_summary", "*_summary"]
    demand = true
    severity = "error"

    [tool.govern.lint]
    severity = "warning"            # report and fail at or above this
    exclude = ["vendor/*"]
    baseline = "govern-baseline.json"
    per-path-ignores = { "migrations/legacy/*" = ["BATCH008"] }

Paths and patterns are relative to the directory of the file that sets them.
Other tables under ``[tool.govern]`` belong to other commands and are left alone.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from govern.errors import ConfigError
from govern.rules.model import Severity

CONFIG_NAMES = ("govern.toml", "pyproject.toml")
_LINT_KEYS = {"severity", "exclude", "baseline", "per-path-ignores"}


@dataclasses.dataclass
class RulesConfig:
    """Everything that decides which rules run and how: one per config file."""

    path: Path | None = None
    root: Path = dataclasses.field(default_factory=Path.cwd)
    target: str | None = None
    select: list[str] | None = None
    ignore: list[str] = dataclasses.field(default_factory=list)
    severities: dict[str, Severity] = dataclasses.field(default_factory=dict)
    options: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    per_class_ignores: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    per_path_ignores: list[tuple[str, list[str]]] = dataclasses.field(default_factory=list)
    exclude: list[str] = dataclasses.field(default_factory=list)
    severity: Severity | None = None
    baseline: Path | None = None

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "defaults"

    def relative(self, path: Path) -> str:
        """``path`` relative to this config's directory, with forward slashes."""
        try:
            return Path(os.path.relpath(path.resolve(), self.root.resolve())).as_posix()
        except ValueError:  # another drive
            return path.as_posix()

    def excluded(self, path: Path) -> bool:
        relative = self.relative(path)
        return any(fnmatch.fnmatch(relative, pattern) for pattern in self.exclude)

    def ignored_for_class(self, class_id: str | None) -> set[str]:
        """Rule IDs or prefixes ``per-class-ignores`` drops for a query ID (32 or 16 hex)."""
        if not class_id or not self.per_class_ignores:
            return set()
        wanted = {class_id.upper(), class_id.upper()[-16:]}
        return {
            rule
            for key, rules in self.per_class_ignores.items()
            if key.strip().upper() in wanted
            for rule in rules
        }

    def ignored_for(self, path: Path) -> list[str]:
        relative = self.relative(path)
        ignored: list[str] = []
        for pattern, ids in self.per_path_ignores:
            if fnmatch.fnmatch(relative, pattern):
                ignored.extend(ids)
        return ignored


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key} must be a table")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return list(value)


def _id_lists(value: Any, where: str) -> list[tuple[str, list[str]]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of pattern = [rule IDs]")
    return [(str(k), _strings(v, f"{where}.{k}")) for k, v in value.items()]


def _here(path: Path | None, section: str, table: str = "") -> str:
    """``pyproject.toml: [tool.govern.rules.QC005]`` or ``govern.toml: [rules]``."""
    name = ".".join(part for part in (section, table) if part)
    return f"{path or 'config'}: [{name}]" if name else f"{path or 'config'}:"


def parse_config(data: dict[str, Any], path: Path | None, section: str = "") -> RulesConfig:
    """A RulesConfig from the ``[tool.govern]`` table (``section`` names it in messages)."""
    from govern.rules.registry import get_rule, unknown_selectors

    config = RulesConfig(path=path, root=path.parent if path else Path.cwd())
    target = data.get("target")
    if target is not None:
        where = f"{_here(path, section)} target"
        if not isinstance(target, str):
            raise ConfigError(f"{where} must be a string like 'mariadb-10.11'")
        from govern.rules.target import parse_target

        parse_target(target, where)  # validate now, naming the file
        config.target = target

    rules_where = _here(path, section, "rules")
    for key, value in _table(data, "rules", rules_where).items():
        rule = get_rule(key) if isinstance(value, dict) else None
        if key in ("select", "ignore"):
            ids = _strings(value, f"{rules_where} {key}")
            unknown = unknown_selectors(ids)
            if unknown:
                raise ConfigError(f"{rules_where} {key}: unknown rule {unknown[0]!r}")
            if key == "select":
                config.select = ids
            else:
                config.ignore = ids
        elif key == "per-class-ignores":
            where = f"{rules_where} {key}"
            config.per_class_ignores = dict(_id_lists(value, where))
            for class_id, ids in config.per_class_ignores.items():
                if not re.fullmatch(r"(?:[0-9A-Fa-f]{16}){1,2}", class_id.strip()):
                    raise ConfigError(
                        f"{where}: {class_id!r} is not a query ID (32 or 16 hex digits)"
                    )
                unknown = unknown_selectors(ids)
                if unknown:
                    raise ConfigError(f"{where}: unknown rule {unknown[0]!r}")
        elif rule is not None:
            here = _here(path, section, f"rules.{rule.id}")
            known = {o.name: o for o in rule.options}
            options: dict[str, Any] = {}
            for name, option_value in value.items():
                if name == "severity":
                    config.severities[rule.id] = Severity.parse(str(option_value), here)
                elif name in known:
                    options[name] = known[name].check(option_value, here)
                else:
                    choices = ", ".join(["severity", *known])
                    raise ConfigError(f"{here} unknown option {name!r} (known: {choices})")
            config.options[rule.id] = options
        else:
            raise ConfigError(
                f"{rules_where} unknown key {key!r} (select, ignore, per-class-ignores, "
                "or a table named by a rule ID)"
            )

    lint_where = _here(path, section, "lint")
    lint = _table(data, "lint", lint_where)
    for key in lint:
        if key not in _LINT_KEYS:
            raise ConfigError(f"{lint_where} unknown key {key!r} ({', '.join(sorted(_LINT_KEYS))})")
    if "severity" in lint:
        config.severity = Severity.parse(str(lint["severity"]), f"{lint_where} severity")
    if "exclude" in lint:
        config.exclude = _strings(lint["exclude"], f"{lint_where} exclude")
    if "baseline" in lint:
        if not isinstance(lint["baseline"], str):
            raise ConfigError(f"{lint_where} baseline must be a path")
        config.baseline = config.root / lint["baseline"]
    if "per-path-ignores" in lint:
        where = f"{lint_where} per-path-ignores"
        config.per_path_ignores = _id_lists(lint["per-path-ignores"], where)
        for _, ids in config.per_path_ignores:
            unknown = unknown_selectors(ids)
            if unknown:
                raise ConfigError(f"{where}: unknown rule {unknown[0]!r}")
    return config


def load_config(path: Path) -> RulesConfig | None:
    """The config in ``path``; None for a pyproject.toml without ``[tool.govern]``."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "govern" not in tool:
            return None
        return parse_config(_table(tool, "govern", str(path)), path, "tool.govern")
    return parse_config(data, path)


def _shortest(path: Path) -> Path:
    """``path`` relative to the working directory when it is below it (for messages)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


class ConfigFinder:
    """Finds (and caches) the nearest config for each file's directory."""

    def __init__(self, explicit: Path | RulesConfig | None = None) -> None:
        """``explicit``: a config file (``--config``) or object that applies to every file."""
        if isinstance(explicit, Path):
            loaded = load_config(explicit)
            if loaded is None:
                raise ConfigError(f"{explicit}: no [tool.govern] table")
            explicit = loaded
        self._explicit = explicit
        self._by_dir: dict[Path, RulesConfig] = {}
        self._default = RulesConfig()

    def for_path(self, path: Path | None) -> RulesConfig:
        if self._explicit is not None:
            return self._explicit
        directory = (path.parent if path is not None else Path.cwd()).resolve()
        return self._for_dir(directory)

    def _for_dir(self, directory: Path) -> RulesConfig:
        if directory in self._by_dir:
            return self._by_dir[directory]
        found: RulesConfig | None = None
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                found = load_config(_shortest(candidate))
                if found is not None:
                    break
        if found is None:
            parent = directory.parent
            found = self._default if parent == directory else self._for_dir(parent)
        self._by_dir[directory] = found
        return found
