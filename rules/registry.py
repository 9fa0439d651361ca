"""The catalog's index: rule IDs to classes, and selection by ID or prefix."""

from __future__ import annotations

import re
from collections.abc import Iterable

from govern.rules.base import Rule

_RULES: dict[str, type[Rule]] = {}
_ID = re.compile(r"^[A-Z]+[0-9]{3}$")


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: add a rule to the catalog (IDs are unique and never reused)."""
    if not _ID.match(cls.id):
        raise ValueError(f"rule ID {cls.id!r} must look like QC001")
    if cls.id in _RULES and _RULES[cls.id] is not cls:
        raise ValueError(f"rule ID {cls.id} registered twice")
    _RULES[cls.id] = cls
    return cls


def all_rules() -> list[type[Rule]]:
    """Every rule, ordered by family then number (QC, BATCH, META)."""
    import govern.rules.catalog  # noqa: F401  (registers the rules)

    order = {"QC": 0, "BATCH": 1, "META": 2}
    return sorted(_RULES.values(), key=lambda r: (order.get(r.id.rstrip("0123456789"), 9), r.id))


def get_rule(rule_id: str) -> type[Rule] | None:
    all_rules()
    return _RULES.get(rule_id.upper())


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
    ids = [r.id for r in all_rules()]
    return [s for s in selectors if not any(matches(s, rule_id) for rule_id in ids)]


def select(selected: Iterable[str] | None, ignored: Iterable[str]) -> list[type[Rule]]:
    """Rules matching ``selected`` (all when None) and no entry of ``ignored``."""
    chosen = list(selected) if selected is not None else ["ALL"]
    ignore = list(ignored)
    return [
        rule
        for rule in all_rules()
        if any(matches(s, rule.id) for s in chosen) and not any(matches(s, rule.id) for s in ignore)
    ]
