"""Run the selected rules over subjects and apply suppressions: shared by lint and digest.

``build_ruleset`` turns a config (and command-line selection) into rule instances,
setting aside, with the reason, the rules whose needs cannot be met here (no target,
no digest statistics). ``check_source`` runs them over a file, statement by
statement (memory holds one statement's tokens, not the file's); ``check_statement``
over one subject such as a digest class's sample query.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from govern.rules.base import Context, Rule
from govern.rules.config import RulesConfig
from govern.rules.model import Finding, Need
from govern.rules.registry import all_rules, select
from govern.rules.sql.lexer import COMMENT, Source, Token, tokenize
from govern.rules.sql.split import split
from govern.rules.sql.statement import Statement
from govern.rules.suppress import (
    Span,
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
    source: Source,
    ruleset: RuleSet,
    ctx: Context,
    config: RulesConfig,
    progress: Callable[[int], None] | None = None,
) -> CheckResult:
    """Every rule over every statement of a file (stored-program bodies included), in order.

    Statements are split, checked and dropped one at a time; what outlives them is the
    findings and each statement's span (for placing suppression comments). ``progress``
    gets the offset reached, every few hundred statements.
    """
    statement_rules = ruleset.statement_rules()
    checkers = [c for c in (r.script_checker(ctx) for r in ruleset.script_rules()) if c is not None]
    comments: list[Token] = []
    spans: list[Span] = []
    raw: list[Finding] = []
    count = 0
    for statement in split(source, comments):
        count += 1
        ctx.observe(statement)
        for subject in (statement, *statement.body):
            spans.append(span_of(subject))
            for rule in statement_rules:
                raw.extend(rule.check(subject, ctx))
        for checker in checkers:
            raw.extend(checker.feed(statement))
        if progress is not None and count % 256 == 0:
            progress(statement.end)
    for checker in checkers:
        raw.extend(checker.finish())
    result = _suppress(raw, source, comments, spans, ruleset, config)
    result.findings.sort(key=lambda f: (f.location.line or 0, f.location.column or 0, f.rule_id))
    result.statements = count
    return result


def check_statement(
    statement: Statement, ruleset: RuleSet, ctx: Context, config: RulesConfig
) -> CheckResult:
    """The rules over one subject, e.g. a digest class's sample query.

    Suppression comments inside the sample work as in a file, and
    ``per-class-ignores`` of the config drop rules for the statement's class ID
    (the 32-hex query ID or its last 16 hex digits, in any case).
    """
    raw: list[Finding] = []
    for rule in ruleset.statement_rules():
        raw.extend(rule.check(statement, ctx))
    ignored = config.ignored_for_class(statement.class_id)
    before = len(raw)
    raw = [f for f in raw if not any(f.rule_id.startswith(i.upper()) for i in ignored)]
    text = statement.source.text
    # Only comments carrying "govern:" are tokens: without it, no need to scan again.
    comments = [t for t in tokenize(text) if t.kind is COMMENT] if "govern:" in text else []
    result = _suppress(raw, statement.source, comments, [span_of(statement)], ruleset, config)
    result.suppressed += before - len(raw)
    return result


def _suppress(
    raw: list[Finding],
    source: Source,
    comments: list[Token],
    spans: Sequence[Span],
    ruleset: RuleSet,
    config: RulesConfig,
) -> CheckResult:
    if not comments:
        return CheckResult(raw, 0)
    known = {rule.id for rule in all_rules()}
    suppressions, bad = parse_suppressions(source, comments, spans, known)
    kept, suppressed, unused = apply_suppressions(raw, suppressions, source, ruleset.ids)
    kept.extend(_meta_findings(ruleset, config, [*bad, *unused], suppressions))
    return CheckResult(kept, suppressed)
