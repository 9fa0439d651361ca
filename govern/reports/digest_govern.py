"""Reads ``govern digest --format json`` (the ``govern.digest`` document) into the report model.

The digest engine (issue 4) owns that document; this is the one place that knows
its fields, so the reports follow it when it changes.
"""

from __future__ import annotations

from typing import Any

from govern.errors import UsageError
from govern.reports.digest_input import Digest


def from_govern(path: str, document: dict[str, Any]) -> Digest:
    raise UsageError(f"{path}: govern.digest documents are read once the digest engine lands")
