"""``govern digest``'s choices for the rules, apart from the rules themselves.

The command builds them before the digest, and the rules' modules (the catalog, the
lexer, the config reader) then load on a thread while the core digests
(govern/reports/digest_run.py): importing them here would make the main thread load
them first, before the digest starts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from govern.rules.config import RulesConfig
    from govern.rules.model import Severity


@dataclasses.dataclass
class DigestRuleOptions:
    """Command-line choices; each overrides the config file's value when given."""

    select: list[str] | None = None
    ignore: list[str] = dataclasses.field(default_factory=list)
    target: str | None = None
    #: ``--config FILE`` (or a RulesConfig), else the nearest config from the working directory.
    config: Path | RulesConfig | None = None
    fail_on: Severity | None = None
