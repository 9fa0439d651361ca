"""What a rule reports: severities, locations (file or digest class) and findings."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    @classmethod
    def parse(cls, text: str, where: str) -> Severity:
        """``warning`` → Severity.WARNING; anything else names ``where`` in a UsageError."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            from govern.errors import UsageError

            choices = ", ".join(s.value for s in cls)
            raise UsageError(f"{where}: unknown severity {text!r} (choose {choices})") from None


_RANKS = {Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


class Need(StrEnum):
    """What a rule needs to run; the engine skips (and reports) rules whose needs are unmet."""

    SQL = "sql"  # the statement text (every static rule)
    TARGET = "target"  # the target server flavor and version (--target or a live server)
    SCRIPT = "script"  # statements in order: a file's, or a digest's runs on a connection
    DIGEST = "digest"  # digest statistics of a query class (govern digest only)
    FULL_LOG = "full-log"  # a slow log of every statement (long_query_time = 0, no sampling)


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a finding is: ``path:line:column`` for files, a class ID for digests."""

    path: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    class_id: str | None = None

    def span(self) -> dict[str, int]:
        """The known ones of line, column, end_line, end_column."""
        fields = {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def __str__(self) -> str:
        if self.path is None and self.class_id is not None:
            return f"class {self.class_id}"
        parts = [self.path or "<sql>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


_SPACE = re.compile(r"\s+")


@dataclasses.dataclass
class Finding:
    """One rule's verdict on one subject, with the evidence that supports it."""

    rule_id: str
    rule_name: str
    severity: Severity
    message: str
    location: Location
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: First and last line of the statement (suppression comments on any of them apply).
    statement_lines: tuple[int, int] | None = None
    #: The statement text the finding is about (for baseline fingerprints).
    context: str = ""

    @property
    def fingerprint(self) -> str:
        """Stable across line moves and whitespace changes: rule + statement text (+ class)."""
        text = _SPACE.sub(" ", self.context).strip()
        key = "\0".join((self.rule_id, self.location.class_id or "", text))
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]

    def to_json(self) -> dict[str, Any]:
        loc = self.location
        return {
            "rule": self.rule_id,
            "name": self.rule_name,
            "severity": self.severity.value,
            "message": self.message,
            "path": loc.path,
            "line": loc.line,
            "column": loc.column,
            "end_line": loc.end_line,
            "end_column": loc.end_column,
            "class_id": loc.class_id,
            "evidence": self.evidence,
            "fingerprint": self.fingerprint,
        }
