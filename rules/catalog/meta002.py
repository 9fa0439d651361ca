"""META002: A suppression comment that names no known rule or cannot be read.

Produced by the suppression pass (rules/suppress.py); the class is here so it can be
documented, selected and ignored.
"""

from __future__ import annotations

from govern.rules.base import Rule
from govern.rules.model import Severity


class BadSuppression(Rule):
    """A suppression comment that names no known rule or cannot be read.

    ``-- govern: ignore[QC002]`` silences QC002 on that statement; a typo in the ID
    or the syntax would silence nothing and hide that it does. Rule IDs are listed
    by ``govern rules``.

    **Anti-pattern**

        SELECT SQL_CACHE 1; -- govern: ignore[QC999]

        SELECT 1; -- govern: ignor[QC004]

    **Best practice**

        SELECT SQL_CACHE 1; -- govern: ignore[QC004]
    """

    id = "META002"
    name = "bad-suppression"
    severity = Severity.WARNING
