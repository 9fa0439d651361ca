"""Selection over the catalog: rule IDs to classes, by ID or prefix."""

from __future__ import annotations

from collections.abc import Iterable

from govern.rules.base import Rule
from govern.rules.catalog import RULES

_BY_ID: dict[str, type[Rule]] = {rule.id: rule for rule in RULES}


def all_rules() -> list[type[Rule]]:
    """Every rule, in catalog order (query cache, batching, meta)."""
    return list(RULES)


def get_rule(rule_id: str) -> type[Rule] | None:
    return _BY_ID.get(rule_id.upper())


def matches(selector: str, rule_id: str) -> bool:
    """``QC`` or ``QC00`` select by prefix, ``QC001`` exactly, ``ALL`` everything."""
    selector = selector.upper()
    return selector == "ALL" or rule_id.startswith(selector)


def parse_selectors(values: Iterable[str], option: str) -> list[str]:
    """``--select QC,BATCH001 --select META`` → ["QC", "BATCH001", "META"], checked."""
    from govern.errors import UsageError

    ids = [part.strip().upper() for value in values for part in value.split(",") if part.strip()]
    unknown = unknown_selectors(ids)
    if unknown:
        raise UsageError(f"{option}: unknown rule {unknown[0]!r} (see 'govern rules')")
    return ids


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    return [s for s in selectors if not any(matches(s, rule.id) for rule in RULES)]


def select(selected: Iterable[str] | None, ignored: Iterable[str]) -> list[type[Rule]]:
    """Rules matching ``selected`` (all when None) and no entry of ``ignored``."""
    chosen = list(selected) if selected is not None else ["ALL"]
    ignore = list(ignored)
    return [
        rule
        for rule in RULES
        if any(matches(s, rule.id) for s in chosen) and not any(matches(s, rule.id) for s in ignore)
    ]
