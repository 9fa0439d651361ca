"""The rule catalog over a digest: each class's sample query and statistics.

Static rules read the class's worst sample as they would read a file's statement;
the rules that need runtime evidence read the class's figures (``statement.stats``
is the class's ``govern.digest`` document) and the digest-wide facts
(``ctx.digest``). Configuration, selection and suppression are ``govern lint``'s:
the nearest ``govern.toml``/``[tool.govern]``, ``--select``/``--ignore``,
``per-class-ignores`` and ``govern: ignore[…]`` comments inside the sample::

    from govern.digest.document import to_document
    from govern.rules.digest import DigestRuleOptions, check_document

    document = to_document(digest)
    report = check_document(document, DigestRuleOptions(target="mariadb-10.11"))
    report.annotate(document)        # findings next to their classes, "rules" on top
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from govern.digest.classes import ClassDocuments
from govern.digest.columns import TRUNCATED
from govern.rules.base import Context, Rule
from govern.rules.catalog.meta001 import MAX_DEPTH
from govern.rules.catalog.parsing import STATEMENT_WORDS
from govern.rules.config import ConfigFinder
from govern.rules.digest_options import DigestRuleOptions
from govern.rules.engine import build_ruleset, check_statement
from govern.rules.evidence import DigestEvidence
from govern.rules.model import Finding, Severity
from govern.rules.screen import Screen
from govern.rules.sql.statement import Statement
from govern.rules.target import parse_target

#: Rules that judge whether SQL parses; a sample cut at 64 KB would fail them wrongly.
_NEEDS_WHOLE_TEXT = frozenset({"META001"})


@dataclasses.dataclass
class DigestRulesReport:
    """Findings per class, and what ran, for one digest."""

    by_class: dict[str, list[Finding]]  # query ID -> findings (classes with findings only)
    suppressed: int
    rules_run: list[str]
    skipped: dict[str, str]
    target: str | None
    config: str | None
    evidence: DigestEvidence
    fail_on: Severity | None
    notes: list[str]

    @property
    def findings(self) -> list[Finding]:
        return [f for found in self.by_class.values() for f in found]

    def counts(self) -> dict[str, int]:
        found = self.findings
        return {s.value: sum(1 for f in found if f.severity is s) for s in Severity}

    @property
    def exit_code(self) -> int:
        """1 when a finding reaches ``fail_on``, else 0 (no ``fail_on``: always 0)."""
        if self.fail_on is None:
            return 0
        rank = self.fail_on.rank
        return 1 if any(f.severity.rank >= rank for f in self.findings) else 0

    def to_json(self) -> dict[str, Any]:
        """The ``rules`` object of the govern.digest document (docs/json.md)."""
        return {
            "target": self.target,
            "config": self.config,
            "full_log": self.evidence.full_log,
            "full_log_reason": self.evidence.full_log_reason,
            "rules_run": self.rules_run,
            "rules_skipped": [{"rule": k, "reason": v} for k, v in sorted(self.skipped.items())],
            "summary": {
                "findings": len(self.findings),
                "by_severity": self.counts(),
                "suppressed": self.suppressed,
                "classes": sum(1 for found in self.by_class.values() if found),
            },
            "fail_on": self.fail_on.value if self.fail_on else None,
            "tables": {
                name: table.to_json() for name, table in sorted(self.evidence.tables.items())
            },
            "notes": self.notes,
        }

    def annotate(self, document: dict[str, Any]) -> None:
        """Put each class's findings next to it, and the ``rules`` object on top.

        Lazy classes (:func:`govern.digest.document.build_document`) get the findings as
        each class document is built; a list's class documents get them now.
        """
        classes: ClassDocuments = document["classes"]
        classes.attach_findings(self.findings_json)
        document["rules"] = self.to_json()

    def findings_json(self, class_id: str) -> list[dict[str, Any]]:
        """A class's findings as its document lists them."""
        found = self.by_class.get(class_id)
        return [f.to_json() for f in found] if found else []


def check_document(
    document: Mapping[str, Any], options: DigestRuleOptions | None = None
) -> DigestRulesReport:
    """Run the catalog over every class of a ``govern.digest`` document.

    Every class is screened at once (govern/rules/screen.py); only the classes a rule
    can fire on, and those the digest-wide evidence needs, are read, one class document
    at a time: lazy classes are never all built at once."""
    options = options or DigestRuleOptions()
    config = ConfigFinder(options.config).for_path(None)
    target_name = options.target or config.target
    where = "--target" if options.target else f"{config.label}: target"
    target = parse_target(target_name, where) if target_name else None
    classes: ClassDocuments = document["classes"]
    screen = Screen.of(classes, STATEMENT_WORDS, MAX_DEPTH)
    evidence = DigestEvidence(document, screen)
    ruleset = build_ruleset(
        config,
        has_target=target is not None,
        select_ids=options.select,
        ignore_ids=options.ignore,
        digest=True,
        full_log=evidence.full_log,
    )
    ctx = Context(target, target_name, digest=evidence)
    by_class: dict[str, list[Finding]] = {}
    suppressed = 0
    truncated = screen.count_flagged(TRUNCATED)
    # Only the classes some rule can fire on are read, each by those rules only
    # (govern/rules/screen.py).
    for position, rules in screened(screen, ruleset.statement_rules(), ctx):
        item = classes.view_at(position)
        sample = item.get("sample")
        if not sample:
            continue
        subject = Statement.from_sql(sample["query"], class_id=item["id"], stats=item, compact=True)
        result = check_statement(subject, ruleset, ctx, config, rules)
        findings = result.findings
        if sample.get("truncated"):
            findings = [f for f in findings if f.rule_id not in _NEEDS_WHOLE_TEXT]
        for finding in findings:
            # Samples change from log to log; the class does not: keep baselines stable.
            finding.context = item.get("fingerprint") or ""
        findings.sort(key=lambda f: (-f.severity.rank, f.rule_id, f.location.line or 0))
        if findings:
            by_class[item["id"]] = findings
        suppressed += result.suppressed
    notes = []
    if truncated:
        notes.append(
            f"{truncated:,} sample{'' if truncated == 1 else 's'} cut at 64 KB: "
            f"{', '.join(sorted(_NEEDS_WHOLE_TEXT))} not run on them"
        )
    return DigestRulesReport(
        by_class=by_class,
        suppressed=suppressed,
        rules_run=sorted(ruleset.ids),
        skipped=ruleset.skipped,
        target=target_name,
        config=str(config.path) if config.path else None,
        evidence=evidence,
        fail_on=options.fail_on,
        notes=notes,
    )


def screened(
    screen: Screen, rules: Sequence[Rule], ctx: Context
) -> Iterator[tuple[int, Sequence[Rule]]]:
    """The classes some rule of ``rules`` can fire on (govern/rules/screen.py), in order,
    each with those rules (in ``rules``' order; every rule for a class always read)."""
    by_class: dict[int, list[Rule]] = {}
    for rule in rules:
        screen_of = rule.digest_screen(screen, ctx)
        if screen_of is None:  # a rule without a screen: every class, every rule
            yield from ((position, rules) for position in range(screen.size))
            return
        for position in screen_of:
            found = by_class.get(position)
            if found is None:
                by_class[position] = [rule]
            else:
                found.append(rule)
    always = screen.always
    for position in sorted(by_class.keys() | always):
        yield position, rules if position in always else by_class[position]
