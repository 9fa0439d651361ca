"""META003: A suppression comment that suppresses nothing: the finding it was for is gone.

Produced by the suppression pass (rules/suppress.py); the class is here so it can be
documented, selected and ignored.
"""

from __future__ import annotations

from govern.rules.base import Rule
from govern.rules.model import Severity


class UnusedSuppression(Rule):
    """A suppression comment that suppresses nothing: the finding it was for is gone.

    Remove it, or it will silence a future, unrelated finding. Only rules that ran
    count: a suppression of a rule that was not selected is not reported.

    **Anti-pattern**

        SELECT id FROM users; -- govern: ignore[QC001]

    **Best practice**

        SELECT SQL_CACHE 1; -- govern: ignore[QC004]
    """

    id = "META003"
    name = "unused-suppression"
    severity = Severity.WARNING
