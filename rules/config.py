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

    [[tool.govern.lint.paths]]      # per-path targets, in order; the last match wins
    glob = "mysql/**"
    target = "mysql-8.0"
    [[tool.govern.lint.paths]]
    glob = "pg/**"
    skip = true                     # not MySQL: counted as skipped, not linted
    [[tool.govern.lint.paths]]
    glob = "jobs/**"
    batch-job = true                # BATCH010 checks these files' UPDATEs and DELETEs

``govern.toml`` takes the same keys at top level or under ``[tool.govern]``. Paths and
patterns are relative to the directory of the file that sets them. Every key is checked: an
unknown one is an error naming ``file:line`` with the nearest known key.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from govern.errors import ConfigError
from govern.rules.model import Severity

CONFIG_NAMES = ("govern.toml", "pyproject.toml")
_TOP_KEYS = ("target", "rules", "lint")
_LINT_KEYS = ("severity", "exclude", "baseline", "per-path-ignores", "paths")
_PATH_KEYS = ("glob", "target", "skip", "batch-job")


@dataclasses.dataclass(frozen=True)
class PathRule:
    """One ``[[lint.paths]]`` entry: files matching ``glob`` get ``target``, are skipped, or
    are batch jobs (BATCH010, BATCH011)."""

    glob: str
    target: str | None = None
    skip: bool = False
    batch_job: bool = False


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
    paths: list[PathRule] = dataclasses.field(default_factory=list)

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
        """``exclude`` or a ``skip = true`` path entry matches: the file is not linted."""
        relative = self.relative(path)
        return any(fnmatch.fnmatch(relative, pattern) for pattern in self.exclude) or any(
            rule.skip and fnmatch.fnmatch(relative, rule.glob) for rule in self.paths
        )

    def target_for(self, path: Path | None) -> str | None:
        """The target of the last ``[[lint.paths]]`` entry matching ``path``, else ``target``."""
        if path is not None and self.paths:
            relative = self.relative(path)
            for rule in reversed(self.paths):
                if rule.target and fnmatch.fnmatch(relative, rule.glob):
                    return rule.target
        return self.target

    def batch_job(self, path: Path | None) -> bool:
        """Does a ``batch-job = true`` entry match ``path``?"""
        if path is None:
            return False
        relative = self.relative(path)
        return any(r.batch_job and fnmatch.fnmatch(relative, r.glob) for r in self.paths)

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


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*[=.]""")


def _parts(dotted: str) -> list[str]:
    return [part.strip().strip("\"'") for part in dotted.split(".")]


def key_line(text: str, table: list[str], key: str) -> int | None:
    """The line (1-based) of ``key`` in ``[table]`` (or of ``[table.key]``) in TOML ``text``:
    tomllib keeps no positions, and an error must name file:line."""
    current: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = _parts(header.group(1))
            if current[: len(table) + 1] == [*table, key]:
                return number
            continue
        found = _KEY.match(line)
        if found and current == table and found.group(1).strip("\"'") == key:
            return number
    return None


def _check_keys(
    data: dict[str, Any], known: Iterable[str], where: str, source: _Source, table: list[str]
) -> None:
    """A ConfigError for the first key of ``data`` not in ``known``, with file:line and the
    nearest known key."""
    choices = list(known)
    for key in data:
        if key not in choices:
            hint = _hint(key, choices)
            raise ConfigError(f"{source.at(table, key, where)} unknown key {key!r} ({hint})")


def _hint(key: str, choices: list[str], otherwise: str | None = None) -> str:
    """``did you mean 'severity'?`` for the nearest choice, else what is known."""
    near = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    return f"did you mean {near[0]!r}?" if near else otherwise or f"known: {', '.join(choices)}"


@dataclasses.dataclass
class _Source:
    """A config file's name and text, to point at lines."""

    path: Path | None
    text: str = ""
    prefix: tuple[str, ...] = ()

    def at(self, table: list[str], key: str, where: str) -> str:
        """``where`` (``govern.toml: [lint]``) as ``govern.toml:12: [lint]`` when the key's
        line is found."""
        line = key_line(self.text, [*self.prefix, *table], key) if self.text else None
        name = f"{self.path}:"
        if line and where.startswith(name):
            return f"{self.path}:{line}:{where[len(name) :]}"
        return where


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


def parse_config(
    data: dict[str, Any], path: Path | None, section: str = "", text: str = ""
) -> RulesConfig:
    """A RulesConfig from the ``[tool.govern]`` table (``section`` names it in messages;
    ``text``, the file's, lets errors name the line)."""
    from govern.rules.registry import get_rule, unknown_selectors

    source = _Source(path, text, tuple(_parts(section)) if section else ())
    _check_keys(data, _TOP_KEYS, _here(path, section), source, [])
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
                    hint = _hint(name, ["severity", *known])
                    where = source.at(["rules", key], name, here)
                    raise ConfigError(f"{where} unknown option {name!r} ({hint})")
            config.options[rule.id] = options
        else:
            from govern.rules.registry import all_rules

            hint = _hint(
                key,
                ["select", "ignore", "per-class-ignores", *(r.id for r in all_rules())],
                "select, ignore, per-class-ignores, or a table named by a rule ID",
            )
            raise ConfigError(
                f"{source.at(['rules'], key, rules_where)} unknown key {key!r} ({hint})"
            )

    lint_where = _here(path, section, "lint")
    lint = _table(data, "lint", lint_where)
    _check_keys(lint, _LINT_KEYS, lint_where, source, ["lint"])
    if "paths" in lint:
        config.paths = _path_rules(lint["paths"], lint_where, source)
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


def _path_rules(value: Any, where: str, source: _Source) -> list[PathRule]:
    """``[[lint.paths]]`` entries, checked (a glob, and a target, skip or batch-job)."""
    from govern.rules.target import parse_target

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{where} paths must be [[lint.paths]] tables")
    rules = []
    for number, entry in enumerate(value, start=1):
        here = f"{where} paths #{number}"
        _check_keys(entry, _PATH_KEYS, here, source, ["lint", "paths"])
        glob, target, skip = entry.get("glob"), entry.get("target"), entry.get("skip", False)
        batch_job = entry.get("batch-job", False)
        if not isinstance(glob, str) or not glob:
            raise ConfigError(f"{here}: glob must be a pattern such as 'pg/**'")
        if target is not None and not isinstance(target, str):
            raise ConfigError(f"{here}: target must be a string like 'mysql-8.0'")
        if not isinstance(skip, bool) or not isinstance(batch_job, bool):
            raise ConfigError(f"{here}: skip and batch-job must be true or false")
        if target is None and not skip and not batch_job:
            raise ConfigError(f"{here}: give a target, skip = true or batch-job = true")
        if target is not None:
            parse_target(target, f"{here} target")
        rules.append(PathRule(glob, target, skip, batch_job))
    return rules


def load_config(path: Path) -> RulesConfig | None:
    """The config in ``path``; None for a pyproject.toml without ``[tool.govern]``."""
    try:
        text = path.read_bytes().decode("utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    tool = data.get("tool", {})
    if path.name == "pyproject.toml":
        if not isinstance(tool, dict) or "govern" not in tool:
            return None
        return parse_config(_table(tool, "govern", str(path)), path, "tool.govern", text)
    if "tool" in data:  # govern.toml written as pyproject's [tool.govern]: the same keys
        source = _Source(path, text)
        _check_keys(
            tool if isinstance(tool, dict) else {}, ["govern"], f"{path}: [tool]", source, ["tool"]
        )
        others = [key for key in data if key != "tool"]
        if others:
            raise ConfigError(
                f"{source.at([], others[0], f'{path}:')} {others[0]!r} at top level and [tool.govern] "
                "in one file: use one of the two forms"
            )
        return parse_config(_table(tool, "govern", str(path)), path, "tool.govern", text)
    return parse_config(data, path, "", text)


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
