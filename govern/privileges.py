"""What the current account may do, read from ``SHOW GRANTS`` (no extra privilege needed).

Only privilege names and scopes are kept: the raw grant lines can carry password
hashes and are never stored or printed.
"""

from __future__ import annotations

import dataclasses
import re

from govern.connection import Connection, query_all
from govern.server import ServerInfo

_GRANT_RE = re.compile(
    r"^GRANT (?P<privs>.+?) ON (?P<scope>(?:PROCEDURE |FUNCTION )?\S+) TO ", re.I
)


@dataclasses.dataclass
class FeatureCheck:
    """One govern feature (or collect source): ready or not, every reason why not, with the
    fix (a GRANT, a setting). Here, below doctor and the features that check themselves."""

    key: str
    title: str
    ready: bool = True
    missing: list[str] = dataclasses.field(default_factory=list)
    fixes: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def need(self, reason: str, fix: str | None = None) -> None:
        self.ready = False
        self.missing.append(reason)
        if fix and fix not in self.fixes:
            self.fixes.append(fix)


def _split_privileges(text: str) -> list[str]:
    """``SELECT (a, b), INSERT`` → ["SELECT", "INSERT"] (column lists dropped)."""
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(current))
            current = []
            continue
        elif depth == 0:
            current.append(ch)
    out.append("".join(current))
    return [" ".join(p.split()).upper() for p in out if p.strip()]


def _unquote_identifier(text: str) -> str:
    return text.strip().strip("`").replace("``", "`")


@dataclasses.dataclass(frozen=True)
class Grants:
    """Privileges by scope: ``*.*`` globally, ``db.*`` per schema."""

    global_privileges: frozenset[str]
    schema_privileges: dict[str, frozenset[str]]

    def has(self, privilege: str, schema: str | None = None) -> bool:
        privilege = privilege.upper()
        if "ALL PRIVILEGES" in self.global_privileges or privilege in self.global_privileges:
            return True
        if schema is None:
            return False
        held = self.schema_privileges.get(schema, frozenset())
        return "ALL PRIVILEGES" in held or privilege in held

    def has_any(self, privileges: tuple[str, ...], schema: str | None = None) -> bool:
        return any(self.has(p, schema) for p in privileges)

    def on_any_schema(self, privilege: str) -> bool:
        return self.has(privilege) or any(
            privilege.upper() in privs or "ALL PRIVILEGES" in privs
            for privs in self.schema_privileges.values()
        )


def parse_grants(lines: list[str]) -> Grants:
    global_privs: set[str] = set()
    schemas: dict[str, set[str]] = {}
    for line in lines:
        match = _GRANT_RE.match(line)
        if not match:
            continue
        scope = match.group("scope")
        if scope.upper().startswith(("PROCEDURE ", "FUNCTION ")):
            continue
        privs = _split_privileges(match.group("privs"))
        if scope == "*.*":
            global_privs.update(privs)
            continue
        db, _, table = scope.partition(".")
        if table == "*":
            schemas.setdefault(_unquote_identifier(db), set()).update(privs)
    return Grants(frozenset(global_privs), {k: frozenset(v) for k, v in schemas.items()})


def read_grants(conn: Connection) -> Grants:
    return parse_grants([str(row[0]) for row in query_all(conn, "SHOW GRANTS")])


def grant_statement(
    privileges: tuple[str, ...] | str, user: str, host: str, on: str = "*.*"
) -> str:
    """The GRANT a DBA would run to give ``user@host`` what is missing."""
    names = (privileges,) if isinstance(privileges, str) else privileges
    return f"GRANT {', '.join(names)} ON {on} TO '{user}'@'{host}';"


def account_warnings(server: ServerInfo, grants: Grants) -> list[str]:
    """What the account may do that it should not: write past read_only on a replica (a
    scheduler worker's account, above all: a job's stray write would diverge it)."""
    held = [p for p in server.read_only_bypass_privileges if grants.has(p)]
    if not held or not (server.is_replica or server.read_only):
        return []
    what = "a replica" if server.is_replica else "read_only"
    return [
        f"this account holds {' and '.join(held)}: read_only does not stop its writes, and this"
        f" server is {what}. A worker account of govern schedule should not have it (govern"
        " hands jobs read-only sessions, but a job can leave them); use an account without it"
    ]
