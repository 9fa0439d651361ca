"""Which tables a query class reads and writes, from its fingerprint.

Rules need per-table evidence ("this class writes ``orders`` 3,000 times a
minute"), and a class's fingerprint has all it takes: literals are gone, and
keywords and names are lower case. This is a pattern reading of the SQL (like
pt-query-digest's table list), not a parser: it finds the tables after FROM,
JOIN, INTO, UPDATE, TABLE, and sorts them into read and written by the
statement's verb. Names keep pt's digit folding (``users_?``).
"""

from __future__ import annotations

import re

_NAME = r"(?:`[^`]+`|[a-z0-9_$?]+)(?:\.(?:`[^`]+`|[a-z0-9_$?]+))?"
_READ = re.compile(rf"\b(?:from|join)\s+({_NAME}(?:\s*,\s*{_NAME})*)")
_INTO = re.compile(rf"\binto\s+(?:table\s+)?({_NAME})")
_UPDATE = re.compile(
    rf"^update\s+(?:low_priority\s+)?(?:ignore\s+)?({_NAME}(?:\s+(?:as\s+)?[a-z_]\w*)?"
    rf"(?:\s*(?:,|(?:(?:inner|cross|left|right|straight_join|natural)\s+)*join)\s*{_NAME}"
    rf"(?:\s+(?:as\s+)?[a-z_]\w*)?(?:\s+on\s+.*?|\s+using\s*\([^)]*\))?)*)\s+set\b"
)
_DDL = re.compile(
    rf"^(?:alter|truncate|drop|create|rename|optimize|analyze|repair)\s+"
    rf"(?:(?:temporary|online|offline|ignore)\s+)*(?:table\s+)?(?:if\s+(?:not\s+)?exists\s+)?({_NAME})"
)
_DELETE = re.compile(
    rf"^delete\s+(?:low_priority\s+)?(?:quick\s+)?(?:ignore\s+)?({_NAME})?\s*(?:from\s+({_NAME}))?"
)
_ALIAS_WORDS = frozenset({"where", "set", "on", "using", "group", "order", "limit", "having"})
WRITE_VERBS = (
    "insert",
    "replace",
    "update",
    "delete",
    "alter",
    "truncate",
    "drop",
    "create",
    "rename",
    "load",
)


def _names(text: str) -> list[str]:
    found = []
    for part in text.split(","):
        name = part.strip().split()[0] if part.strip() else ""
        if name and name not in _ALIAS_WORDS and not name.startswith("("):
            found.append(name.replace("`", ""))
    return found


def tables(fingerprint: str) -> dict[str, list[str]]:
    """``{"read": [...], "written": [...]}``, each sorted, without duplicates."""
    text = fingerprint.strip().lower()
    verb = text.split(" ", 1)[0] if text else ""
    read: set[str] = set()
    written: set[str] = set()
    for match in _READ.finditer(text):
        read.update(_names(match.group(1)))
    if verb in ("insert", "replace", "load"):
        into = _INTO.search(text)
        if into:
            written.add(into.group(1).replace("`", ""))
    elif verb == "update":
        update = _UPDATE.match(text)
        if update:
            target = re.split(
                r"\s+(?:(?:inner|cross|left|right|natural)\s+)*join\s+", update.group(1)
            )
            for piece in target:
                written.update(_names(re.sub(r"\s+(?:on|using)\b.*", "", piece)))
    elif verb == "delete":
        delete = _DELETE.match(text)
        if delete:
            targets = (
                delete.group(1)
                if delete.group(1) and delete.group(1) != "from"
                else delete.group(2)
            )
            if targets:
                written.add(targets.replace("`", ""))
    elif verb in WRITE_VERBS:
        ddl = _DDL.match(text)
        if ddl:
            written.add(ddl.group(1).replace("`", ""))
    if verb in ("delete",):
        read -= written
    return {"read": sorted(read - {"dual"}), "written": sorted(written)}
