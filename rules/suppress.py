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

import bisect
import dataclasses
import re
from collections.abc import Iterable, Sequence

from govern.rules.model import Finding, Location, Severity
from govern.rules.sql.lexer import Source, Token
from govern.rules.sql.statement import Statement

_DIRECTIVE = re.compile(r"govern:\s*(?P<verb>[\w-]*)\s*(?P<ids>\[[^\]]*\]?)?")
_ID = re.compile(r"^[A-Za-z]+[0-9]{3}$")


@dataclasses.dataclass
class Suppression:
    comment: Token
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


def _meta(rule_id: str, name: str, message: str, source: Source, token: Token) -> Finding:
    line, column = source.position(token.start)
    end_line, end_column = source.position(token.end)
    return Finding(
        rule_id=rule_id,
        rule_name=name,
        severity=Severity.WARNING,
        message=message,
        location=Location(source.path, line, column, end_line, end_column),
        statement_lines=(line, end_line),
        context=token.value,
    )


#: (first offset, offset past its delimiter, (first line, last line)) of a statement.
Span = tuple[int, int, tuple[int, int]]


def span_of(statement: Statement) -> Span:
    return statement.start, max(statement.end, statement.stop or 0), statement.lines


def parse_suppressions(
    source: Source, comments: Iterable[Token], spans: Sequence[Span], known: set[str]
) -> tuple[list[Suppression], list[Finding]]:
    """Suppressions in ``comments`` and META002 findings for the unreadable ones;
    ``spans`` (see ``span_of``) place each comment on its statement."""
    spans = sorted(spans)
    starts = [span[0] for span in spans]
    suppressions: list[Suppression] = []
    problems: list[Finding] = []
    for comment in comments:
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
                        source,
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
                            source,
                            comment,
                        )
                    )
                rule_ids = tuple(n for n in names if n not in unknown)
                if not rule_ids:
                    continue
            line, column = source.position(comment.start)
            lines = None if verb == "ignore-file" else _covered(source, comment, spans, starts)
            suppressions.append(Suppression(comment, line, column, rule_ids, lines))
    return suppressions, problems


def _covered(
    source: Source, comment: Token, spans: Sequence[Span], starts: list[int]
) -> tuple[int, int]:
    """Lines of the statement a comment is attached to (see the module docstring)."""
    line = source.position(comment.start)[0]
    before = bisect.bisect_right(starts, comment.start) - 1
    # Innermost statement containing the comment, or ending on its line before it.
    candidates = [
        span
        for span in spans[: before + 1]
        if span[0] <= comment.start <= span[1] or span[2][1] == line
    ]
    if candidates:
        best = min(candidates, key=lambda span: span[1] - span[0])
        return best[2]
    if before + 1 < len(spans):
        return spans[before + 1][2]
    return (line, line)


def apply_suppressions(
    findings: list[Finding],
    suppressions: list[Suppression],
    source: Source,
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
                    source,
                    suppression.comment,
                )
            )
    return kept, suppressed, unused
