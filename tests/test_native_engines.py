"""The core's whole-file digest (``native.digest_file``) against the Python engine, per corpus log.

The full JSON conformance of the engine's path (``range.rs`` behind ``digest_range``) is in
tests/test_digest_native_conformance.py; this checks the part-1 ``Digest`` API, which
computes a subset of the aggregates. What both compute must agree exactly: the classes and their counts, every numeric attribute (count, exact sum, min,
max, sketch buckets, in micro-units), Yes/No flags, value counts of db, user and host,
and the events counted as without statement or malformed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import require_corpus

from govern import native
from govern.digest.engine import EngineOptions, digest_range

pytestmark = pytest.mark.skipif(
    not native.available(), reason="native core not built (no cargo at install time)"
)

#: Metrics only the Python engine computes so far.
PYTHON_ONLY_METRICS = {"Values_rows"}


def corpus_logs() -> list[Path]:
    corpus = require_corpus()
    return sorted(
        p for p in corpus.glob("*/*") if p.suffix not in (".md", ".gz") and p.stat().st_size > 0
    )


def python_side(data: bytes) -> dict[bytes, dict[str, Any]]:
    partial = digest_range(
        data, 0, len(data), at_start=True, options=EngineOptions(max_classes=10**9)
    ).partial
    out = {}
    for fp, agg in partial.classes.items():
        out[fp] = {
            "count": agg.count,
            "metrics": {
                name: (m.count, m.total, m.low, m.high, sorted(m.buckets.items()))
                for name, m in agg.metrics.items()
                if name not in PYTHON_ONLY_METRICS
            },
            "flags": {name: tuple(v) for name, v in agg.booleans.items()},
            "values": {
                name: dict(agg.strings.get(name, {}))
                for name in ("db", "user", "host")
                if name in agg.strings
            },
        }
    return out


def native_side(digest: Any) -> dict[bytes, dict[str, Any]]:
    out = {}
    for i in range(len(digest)):
        c = digest.class_at(i)
        text = lambda b: b.decode("utf-8", "surrogateescape")  # noqa: E731
        out[c["fingerprint"]] = {
            "count": c["count"],
            "metrics": {
                text(name): (m["count"], m["sum"], m["min"], m["max"], sorted(m["buckets"]))
                for name, m in c["metrics"].items()
            },
            "flags": {text(name): tuple(v) for name, v in c["flags"].items()},
            "values": {
                text(name): {text(v): n for v, n in pairs}
                for name, pairs in c["values"].items()
                if name in (b"db", b"user", b"host")
            },
        }
    return out


@pytest.mark.parametrize(
    "log", corpus_logs() if Path(__file__).resolve().parents[2].joinpath("shared").is_dir() else []
)
def test_native_core_agrees_with_the_python_engine(log: Path) -> None:
    data = log.read_bytes()
    want = python_side(data)
    got = native_side(native.digest_file(log, threads=2))
    assert got.keys() == want.keys()
    for fp in want:
        assert got[fp] == want[fp], fp
