"""EXPLAIN of the worst sample of a closing bucket's top classes (docs/design/collect.md,
"EXPLAIN").

On the server the user names (a replica, normally: the plans are the primary's as
long as the data and statistics are), in a session that cannot write, is kept out
of the slow log and stops any statement after ``seconds``. A read-only session
refuses ``EXPLAIN UPDATE`` (error 1792, measured on MariaDB 10.11), so an UPDATE,
DELETE or INSERT … SELECT is explained as the SELECT that finds its rows, as
pt-query-advisor did. Statements that cannot be explained (DDL, CALL, a sample
cut short, several statements) are counted, not tried.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pymysql

from govern.collect.digesting import Aggregate
from govern.collect.session import Session
from govern.connection import ConnectionSettings, error_text

_SELECT = re.compile(r"\A\s*(?:\(\s*)*(?:SELECT|WITH)\b", re.I)
_UPDATE = re.compile(
    r"\A\s*UPDATE\s+(?:LOW_PRIORITY\s+)?(?:IGNORE\s+)?(?P<tables>.+?)\s+SET\s+(?P<set>.+?)"
    r"(?:\s+WHERE\s+(?P<where>.+?))?(?:\s+ORDER\s+BY\s+.+?)?(?:\s+LIMIT\s+[0-9, ]+)?\s*;?\s*\Z",
    re.I | re.S,
)
_DELETE = re.compile(
    r"\A\s*DELETE\s+(?:LOW_PRIORITY\s+)?(?:QUICK\s+)?(?:IGNORE\s+)?FROM\s+(?P<rest>.+?)\s*;?\s*\Z",
    re.I | re.S,
)
_INSERT_SELECT = re.compile(
    r"\A\s*(?:INSERT|REPLACE)\b.*?\b(?P<select>SELECT\b.*?)"
    r"(?:\s+ON\s+DUPLICATE\s+KEY\s+UPDATE\b.*)?\s*;?\s*\Z",
    re.I | re.S,
)


@dataclass
class ExplainOptions:
    settings: ConnectionSettings
    top: int = 5  # classes per bucket
    seconds: float = 2.0  # max_statement_time of each EXPLAIN


def explainable(statement: str) -> str | None:
    """The SELECT to explain for ``statement``; None when EXPLAIN cannot take it."""
    text = statement.strip().rstrip(";").strip()
    if not text or _several(text):
        return None
    if _SELECT.match(text):
        return text
    update = _UPDATE.match(text)
    if update:
        where = f" WHERE {update['where']}" if update["where"] else ""
        return f"SELECT {update['set']} FROM {update['tables']}{where}"
    delete = _DELETE.match(text)
    if delete:
        return f"SELECT * FROM {delete['rest']}"
    insert = _INSERT_SELECT.match(text)
    if insert:
        return insert["select"]
    return None


def _several(text: str) -> bool:
    """More than one statement (a ; outside quotes)."""
    quote = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif char == ";":
            return True
    return False


def summary(plan: Any) -> list[dict[str, Any]]:
    """Each table of a FORMAT=JSON plan: name, access type, key, rows (MariaDB and MySQL)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            table = node.get("table")
            if isinstance(table, dict) and "table_name" in table:
                found.append(
                    {
                        "table": table.get("table_name"),
                        "access": table.get("access_type"),
                        "key": table.get("key"),
                        "rows": table.get("rows", table.get("rows_examined_per_scan")),
                    }
                )
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return found


class Explainer:
    """The collector's ``on_close``: plans for the worst samples of a closing bucket."""

    def __init__(self, options: ExplainOptions) -> None:
        self.options = options
        self.session = Session(options.settings, statement_seconds=options.seconds)

    def close(self) -> None:
        self.session.close()

    def __call__(self, start: str, aggregate: Aggregate) -> dict[str, Any]:
        counts = {"explained": 0, "not_explainable": 0, "failed": 0}
        errors: list[str] = []
        for class_id, sample in aggregate.worst_samples(self.options.top):
            if sample.truncated:
                counts["not_explainable"] += 1
                continue
            query = sample.query.decode("utf-8", "surrogateescape")
            target = explainable(query)
            if target is None:
                counts["not_explainable"] += 1
                continue
            try:
                plan = self._explain(target, sample.db)
            except pymysql.err.MySQLError as exc:
                counts["failed"] += 1
                errors.append(f"{class_id}: {error_text(exc)}")
                continue
            sample.plan = {
                "server": self.options.settings.describe(),
                "as_select": target if target != query.strip().rstrip(";").strip() else None,
                "tables": summary(plan),
                "json": plan,
            }
            counts["explained"] += 1
        return {"explain": counts | {"errors": errors[:10]}}

    def _explain(self, statement: str, db: str | None) -> Any:
        if db:
            self.session.select_db(db)
        ((text,),) = self.session.run("EXPLAIN FORMAT=JSON " + statement)
        return json.loads(text)
