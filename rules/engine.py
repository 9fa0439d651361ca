"""Run the selected rules over subjects and apply suppressions: shared by lint and digest.

``build_ruleset`` turns a config (and command-line selection) into rule instances,
setting aside, with the reason, the rules whose needs cannot be met here (no target,
no digest statistics). ``check_source`` runs them over a file, statement by
statement (memory holds the largest statement, not the file); ``check_statement``
over one subject such as a digest class's sample query.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from govern.rules.base import Context, Rule
from govern.rules.config import RulesConfig
from govern.rules.model import Finding, Location, Need, Severity
from govern.rules.registry import all_rules, select
from govern.rules.sql.lexer import COMMENT, Comment, tokenize
from govern.rules.sql.split import stream
from govern.rules.sql.statement import Statement
from govern.rules.suppress import (
    Placer,
    Suppression,
    apply_suppressions,
    parse_suppressions,
    span_of,
)

NEEDS_TARGET = "needs a target server: --target mariadb-10.11|mysql-8.0|… or connection options"
NEEDS_FULL_LOG = (
    "needs a log of every statement (long_query_time = 0, no sampling or filter on "
    "db/fingerprint): this digest's sequences and write counts are incomplete"
)


@dataclasses.dataclass
class RuleSet:
    """Rule instances to run, and the selected rules that cannot run here (id → why)."""

    rules: list[Rule]
    skipped: dict[str, str]

    @property
    def ids(self) -> set[str]:
        return {rule.id for rule in self.rules}

    def statement_rules(self) -> list[Rule]:
        return [r for r in self.rules if type(r).check is not Rule.check]

    def script_rules(self) -> list[Rule]:
        return [r for r in self.rules if type(r).script_checker is not Rule.script_checker]


def build_ruleset(
    config: RulesConfig,
    *,
    has_target: bool,
    select_ids: Sequence[str] | None = None,
    ignore_ids: Iterable[str] = (),
    digest: bool = False,
    full_log: bool = True,
) -> RuleSet:
    """The config's selection (``select_ids`` replaces it, ``ignore_ids`` adds to it).

    Rules that need digest statistics do not apply to files and are left out of a
    lint without a word; on a digest whose log is not complete (``full_log``),
    the rules that need every statement are set aside with the reason.
    """
    chosen = select(
        select_ids if select_ids is not None else config.select, [*config.ignore, *ignore_ids]
    )
    rules: list[Rule] = []
    skipped: dict[str, str] = {}
    for cls in chosen:
        if Need.TARGET in cls.needs and not has_target:
            skipped[cls.id] = NEEDS_TARGET
        elif Need.DIGEST in cls.needs and not digest:
            continue
        elif Need.FULL_LOG in cls.needs and not full_log:
            skipped[cls.id] = NEEDS_FULL_LOG
        else:
            rules.append(cls(config.options.get(cls.id), config.severities.get(cls.id)))
    return RuleSet(rules, skipped)


def _meta_findings(
    ruleset: RuleSet, config: RulesConfig, findings: list[Finding], suppressions: list[Suppression]
) -> list[Finding]:
    """META002/META003 that are selected and not themselves suppressed, at their severity."""
    kept = []
    for finding in findings:
        if finding.rule_id not in ruleset.ids:
            continue
        if any(s.covers(finding) for s in suppressions):
            continue
        override = config.severities.get(finding.rule_id)
        if override is not None:
            finding.severity = override
        kept.append(finding)
    return kept


@dataclasses.dataclass
class CheckResult:
    findings: list[Finding]
    suppressed: int
    #: Top-level statements read (stored-program bodies not counted again).
    statements: int = 1


def check_source(
    read: Callable[[int], str],
    path: str | None,
    ruleset: RuleSet,
    ctx: Context,
    config: RulesConfig,
    progress: Callable[[int], None] | None = None,
) -> CheckResult:
    """Every rule over every statement of a file (stored-program bodies included), in order.

    The file is read by ``read`` (a text file's) in windows and its statements are split,
    checked and dropped one at a time: memory holds the largest statement and what outlives
    statements, the findings. Suppression comments are placed as they pass (``Placer``).
    ``progress`` gets the number of characters read so far, every few hundred statements.
    """
    statement_rules = ruleset.statement_rules()
    checkers = [c for c in (r.script_checker(ctx) for r in ruleset.script_rules()) if c is not None]
    comments: list[Comment] = []
    placer = Placer()
    raw: list[Finding] = []
    count = 0
    for statement in stream(read, path, comments):
        count += 1
        for comment in comments:
            placer.comment(comment)
        comments.clear()
        ctx.observe(statement)
        subjects = (statement, *statement.body)
        placer.statement([span_of(subject) for subject in subjects])
        for subject in subjects:
            for rule in statement_rules:
                raw.extend(_checked(rule, subject, ctx))
        for checker in checkers:
            raw.extend(checker.feed(statement))
        if progress is not None and count % 256 == 0:
            progress(statement.source.base + statement.end)
    for comment in comments:
        placer.comment(comment)
    for checker in checkers:
        raw.extend(checker.finish())
    result = _suppress(raw, path, placer.finish(), ruleset, config)
    result.findings.sort(key=lambda f: (f.location.line or 0, f.location.column or 0, f.rule_id))
    result.statements = count
    return result


def _checked(rule: Rule, subject: Statement, ctx: Context) -> Iterable[Finding]:
    """The rule's findings; nesting too deep for Python (RecursionError) is one META001 info
    finding, never a traceback."""
    try:
        return list(rule.check(subject, ctx))
    except RecursionError:
        return [
            Finding(
                rule_id="META001",
                rule_name="parse-error",
                severity=Severity.INFO,
                message=f"not analysed by {rule.id}: the statement is nested too deeply",
                location=Location(subject.source.path, *subject.position()),
                statement_lines=subject.lines,
                context=subject.text,
            )
        ]


def check_statement(
    statement: Statement,
    ruleset: RuleSet,
    ctx: Context,
    config: RulesConfig,
    rules: Iterable[Rule] | None = None,
) -> CheckResult:
    """The rules over one subject, e.g. a digest class's sample query.

    Suppression comments inside the sample work as in a file, and
    ``per-class-ignores`` of the config drop rules for the statement's class ID
    (the 32-hex query ID or its last 16 hex digits, in any case). ``rules``: only
    these of the ruleset's statement rules (the others cannot fire on the subject).
    """
    raw: list[Finding] = []
    for rule in ruleset.statement_rules() if rules is None else rules:
        raw.extend(_checked(rule, statement, ctx))
    ignored = config.ignored_for_class(statement.class_id)
    before = len(raw)
    raw = [f for f in raw if not any(f.rule_id.startswith(i.upper()) for i in ignored)]
    source = statement.source
    placer = Placer()
    # Only comments carrying "govern:" are tokens: without it, no need to scan again.
    if "govern:" in source.text:
        for token in tokenize(source.text):
            if token.kind is COMMENT:
                placer.comment(source.comment(token))
    placer.statement([span_of(statement)])
    result = _suppress(raw, source.path, placer.finish(), ruleset, config)
    result.suppressed += before - len(raw)
    return result


def _suppress(
    raw: list[Finding],
    path: str | None,
    placed: list[tuple[Comment, tuple[int, int]]],
    ruleset: RuleSet,
    config: RulesConfig,
) -> CheckResult:
    if not placed:
        return CheckResult(raw, 0)
    known = {rule.id for rule in all_rules()}
    suppressions, bad = parse_suppressions(placed, path, known)
    kept, suppressed, unused = apply_suppressions(raw, suppressions, path, ruleset.ids)
    kept.extend(_meta_findings(ruleset, config, [*bad, *unused], suppressions))
    return CheckResult(kept, suppressed)
