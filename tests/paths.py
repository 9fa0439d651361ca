"""Where the tests find the repository, their data and the shared corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
SLOWLOGS = DATA / "slowlogs"
ORACLES = TESTS / "oracles"
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


def require_corpus() -> Path:
    """The shared slow-log corpus, or a skip with the reason (a fresh clone has no ../shared)."""
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (the shared corpus sits beside the repository in CI)")
    return CORPUS
