"""Suppression comments: ``-- govern: ignore[QC002]`` on a statement, ``ignore-file`` for a file.

Forms (in ``--``, ``#`` or ``/* */`` comments; IDs comma-separated; no IDs = all rules):

* ``-- govern: ignore[QC002]`` after code on a line: the statement(s) on that line;
* the same on a line of its own: the next statement (inside a multi-line statement:
  that statement);
* ``-- govern: ignore-file[BATCH008]`` anywhere: the whole file.

A suppression covers the lines of the statement it is attached to, so it works on
the closing line of a 10,000-line INSERT as well as on its first. Suppressions
that name unknown rules are META002; ones that suppress nothing are META003. The
same parser reads comments inside a digest class's sample query (docs/lint.md,
"Configuration").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from govern.rules.model import Finding, Location, Severity
from govern.rules.sql.lexer import Comment
from govern.rules.sql.statement import Statement

_DIRECTIVE = re.compile(r"govern:\s*(?P<verb>[\w-]*)\s*(?P<ids>\[[^\]]*\]?)?")
_ID = re.compile(r"^[A-Za-z]+[0-9]{3}$")


@dataclasses.dataclass
class Suppression:
    comment: Comment
    line: int
    column: int
    #: Rule IDs (upper case), or None for every rule.
    rule_ids: tuple[str, ...] | None
    #: Lines covered (inclusive), or None for the whole file.
    lines: tuple[int, int] | None
    used: set[str] = dataclasses.field(default_factory=set)

    def covers(self, finding: Finding) -> bool:
        if self.rule_ids is not None and finding.rule_id not in self.rule_ids:
            return False
        if self.lines is None:
            return True
        line = finding.location.line or 0
        return self.lines[0] <= line <= self.lines[1]


def _meta(rule_id: str, name: str, message: str, path: str | None, comment: Comment) -> Finding:
    return Finding(
        rule_id=rule_id,
        rule_name=name,
        severity=Severity.WARNING,
        message=message,
        location=Location(path, comment.line, comment.column, comment.end_line, comment.end_column),
        statement_lines=(comment.line, comment.end_line),
        context=comment.value,
    )


#: (first offset in the file, offset past its delimiter, (first line, last line)) of a statement.
Span = tuple[int, int, tuple[int, int]]


def span_of(statement: Statement) -> Span:
    base = statement.source.base
    return base + statement.start, base + max(statement.end, statement.stop or 0), statement.lines


class Placer:
    """Attaches each suppression comment to the lines it covers while statements stream by
    (see the module docstring): inside a statement, or after one on its last line, it covers
    that statement (the innermost); on a line of its own, the next one. It holds the comments
    not yet placed and the last statement's spans, never the file's."""

    def __init__(self) -> None:
        self.pending: list[Comment] = []
        self.last: list[Span] = []
        self.placed: list[tuple[Comment, tuple[int, int]]] = []

    def comment(self, comment: Comment) -> None:
        self.pending.append(comment)

    def statement(self, spans: list[Span]) -> None:
        """A top-level statement's span then its body's, after the comments before its end."""
        for comment in self.pending:
            lines = _covering(comment, [*self.last, *spans])
            self.placed.append((comment, lines or spans[0][2]))
        self.pending = []
        self.last = spans

    def finish(self) -> list[tuple[Comment, tuple[int, int]]]:
        for comment in self.pending:
            lines = _covering(comment, self.last)
            self.placed.append((comment, lines or (comment.line, comment.line)))
        self.pending = []
        return self.placed


def _covering(comment: Comment, spans: Sequence[Span]) -> tuple[int, int] | None:
    """Lines of the innermost span containing the comment or ending on its line before it."""
    candidates = [
        span
        for span in spans
        if span[0] <= comment.offset and (comment.offset <= span[1] or span[2][1] == comment.line)
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda span: span[1] - span[0])[2]


def parse_suppressions(
    placed: Iterable[tuple[Comment, tuple[int, int]]], path: str | None, known: set[str]
) -> tuple[list[Suppression], list[Finding]]:
    """Suppressions in the placed comments (see ``Placer``) and META002 findings for the
    unreadable ones."""
    suppressions: list[Suppression] = []
    problems: list[Finding] = []
    for comment, covered in placed:
        for match in _DIRECTIVE.finditer(comment.value):
            verb = match.group("verb")
            ids_text = match.group("ids")
            if verb not in ("ignore", "ignore-file") or (ids_text and not ids_text.endswith("]")):
                problems.append(
                    _meta(
                        "META002",
                        "bad-suppression",
                        f"cannot read suppression {match.group(0).strip()!r}: write "
                        "'govern: ignore[ID, …]' or 'govern: ignore-file[ID, …]'",
                        path,
                        comment,
                    )
                )
                continue
            rule_ids: tuple[str, ...] | None = None
            if ids_text:
                names = [n.strip().upper() for n in ids_text[1:-1].split(",") if n.strip()]
                unknown = [n for n in names if not _ID.match(n) or n not in known]
                for name in unknown:
                    problems.append(
                        _meta(
                            "META002",
                            "bad-suppression",
                            f"suppression names unknown rule {name!r} (see 'govern rules')",
                            path,
                            comment,
                        )
                    )
                rule_ids = tuple(n for n in names if n not in unknown)
                if not rule_ids:
                    continue
            lines = None if verb == "ignore-file" else covered
            suppressions.append(Suppression(comment, comment.line, comment.column, rule_ids, lines))
    return suppressions, problems


def apply_suppressions(
    findings: list[Finding],
    suppressions: list[Suppression],
    path: str | None,
    ran: set[str],
) -> tuple[list[Finding], int, list[Finding]]:
    """(kept findings, number suppressed, META003 findings for unused suppressions).

    A suppression is unused when none of its rules that ran produced a finding it
    covers; rules that did not run (not selected, no target) are not held against it.
    """
    kept: list[Finding] = []
    suppressed = 0
    for finding in findings:
        hit = [s for s in suppressions if s.covers(finding)]
        if not hit:
            kept.append(finding)
            continue
        suppressed += 1
        for suppression in hit:
            suppression.used.add(finding.rule_id)
    unused: list[Finding] = []
    for suppression in suppressions:
        wanted = suppression.rule_ids if suppression.rule_ids is not None else ("*",)
        if suppression.rule_ids is None:
            idle = [] if suppression.used else ["every rule"]
        else:
            idle = [rid for rid in wanted if rid in ran and rid not in suppression.used]
        if idle:
            unused.append(
                _meta(
                    "META003",
                    "unused-suppression",
                    f"suppression of {', '.join(idle)} suppresses nothing: remove it",
                    path,
                    suppression.comment,
                )
            )
    return kept, suppressed, unused
