"""Read MySQL option files (``~/.my.cnf``, ``--defaults-file``) the way the mysql client does.

Supported: ``[group]`` headers, ``key=value`` / ``key = value`` / bare ``key``,
``#`` and ``;`` comments, quoted values with the client's escapes, ``!include``
and ``!includedir``, and dashes and underscores as the same character in names.
Later values win, in file order, across all the groups asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from govern.errors import ConfigError

#: Groups govern reads, like the mysql client plus its own ``[govern]`` group.
CLIENT_GROUPS = ("client", "client-server", "client-mariadb", "govern")

_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "r": "\r", "\\": "\\", "s": " ", "'": "'", '"': '"'}
_MAX_INCLUDE_DEPTH = 10


def normalise_key(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _unquote(raw: str, where: str) -> str:
    """Strip a trailing comment and quotes, and apply backslash escapes."""
    value = raw.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        out: list[str] = []
        i = 1
        while i < len(value):
            ch = value[i]
            if ch == "\\" and i + 1 < len(value):
                out.append(_ESCAPES.get(value[i + 1], "\\" + value[i + 1]))
                i += 2
                continue
            if ch == quote:
                rest = value[i + 1 :].strip()
                if rest and not rest.startswith(("#", ";")):
                    raise ConfigError(f"{where}: text after the closing quote")
                return "".join(out)
            out.append(ch)
            i += 1
        raise ConfigError(f"{where}: unterminated quote")
    hash_at = value.find(" #")
    if hash_at >= 0:
        value = value[:hash_at]
    if value.startswith("#"):
        value = ""
    out = []
    i = 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], "\\" + value[i + 1]))
            i += 2
            continue
        out.append(value[i])
        i += 1
    return "".join(out).rstrip()


def read_option_file(
    path: str | os.PathLike[str],
    groups: Iterable[str] = CLIENT_GROUPS,
    *,
    _depth: int = 0,
    _into: dict[str, str | None] | None = None,
) -> dict[str, str | None]:
    """Options of ``groups`` in ``path`` (and its includes); a bare key maps to None.

    Raises ConfigError naming file:line for anything the client would reject.
    """
    wanted = {g.lower() for g in groups}
    options: dict[str, str | None] = {} if _into is None else _into
    path = Path(path)
    if _depth > _MAX_INCLUDE_DEPTH:
        raise ConfigError(f"{path}: !include nested more than {_MAX_INCLUDE_DEPTH} deep")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ConfigError(f"{path}: option file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not an option file") from None
    except PermissionError:
        raise ConfigError(f"{path}: permission denied") from None
    group: str | None = None
    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{lineno}"
        line = raw_line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!include "):
            included = Path(line[len("!include ") :].strip())
            read_option_file(included, wanted, _depth=_depth + 1, _into=options)
            continue
        if line.startswith("!includedir "):
            folder = Path(line[len("!includedir ") :].strip())
            if folder.is_dir():
                for child in sorted(folder.iterdir()):
                    if child.suffix in (".cnf", ".ini") and child.is_file():
                        read_option_file(child, wanted, _depth=_depth + 1, _into=options)
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ConfigError(f"{where}: malformed group header {line!r}")
            group = line[1:-1].strip().lower()
            continue
        if group is None:
            raise ConfigError(f"{where}: option outside any [group]")
        if group not in wanted:
            continue
        key, sep, value = line.partition("=")
        key = normalise_key(key)
        if not key:
            raise ConfigError(f"{where}: option without a name")
        options[key] = _unquote(value, where) if sep else None
    return options


def default_option_file() -> Path | None:
    """``~/.my.cnf`` when it exists: the file govern reads when no --defaults-file is given."""
    home = os.environ.get("HOME")
    if not home:
        return None
    candidate = Path(home) / ".my.cnf"
    return candidate if candidate.is_file() else None
