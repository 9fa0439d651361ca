"""The reports read ``govern.digest`` documents (docs/json.md) into their model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from govern.errors import UsageError
from govern.reports.compare import compare_digests
from govern.reports.digest_html import digest_report
from govern.reports.digest_input import load_digest

QUERY_ID = "3A99CC42AEDCCFCD" * 2


def document(**extra: Any) -> dict[str, Any]:
    """A minimal govern.digest/1 document with one class and two servers (a merged digest)."""
    return {
        "schema": "govern.digest",
        "schema_version": 1,
        "inputs": [{"name": "db1.log", "host": "db1"}, {"name": "db2.log", "host": "db2"}],
        "window": {
            "first_seen": "2024-03-01T10:00:00",
            "last_seen": "2024-03-01T11:00:00",
            "seconds": 3600,
        },
        "totals": {"events": 30, "classes": 1, "query_time": 3.0, "other_events": 0},
        "malformed": [{"file": "db1.log", "line": 7, "reason": "no query"}],
        "omitted_classes": 0,
        "classes": [
            {
                "id": QUERY_ID,
                "id16": QUERY_ID[-16:],
                "fingerprint": "select * from t where id = ?",
                "count": 30,
                "first_seen": "2024-03-01T10:00:00",
                "last_seen": "2024-03-01T11:00:00",
                "metrics": {
                    "Query_time": {
                        "count": 30,
                        "sum": 3.0,
                        "min": 0.01,
                        "max": 0.5,
                        "avg": 0.1,
                        "median": 0.08,
                        "p95": 0.4,
                        "p99": 0.5,
                    },
                    "Rows_examined": {
                        "count": 30,
                        "sum": 300,
                        "min": 1,
                        "max": 20,
                        "avg": 10.0,
                        "median": 9,
                        "p95": 19,
                        "p99": 20,
                    },
                    "Query_length": {
                        "count": 30,
                        "sum": 900,
                        "min": 30,
                        "max": 30,
                        "avg": 30.0,
                        "median": 30,
                        "p95": 30,
                        "p99": 30,
                    },
                },
                "flags": {"Full_scan": {"yes": 3, "count": 30}},
                "values": {
                    "db": {"shop": 30},
                    "user": {"app": 20, "batch": 10},
                    "host": {"10.0.0.5": 30},
                },
                "servers": {"db1": 18, "db2": 12},
                "histogram": {
                    "Query_time": [0, 0, 0, 0, 10, 15, 5, 0],
                    "labels": ["1us", "10us", "100us", "1ms", "10ms", "100ms", "1s", "10s+"],
                },
                "sample": {
                    "query": "select * from t where id = 42",
                    "query_time": 0.5,
                    "ts": "2024-03-01T10:30:00",
                    "db": "shop",
                    "user": "app",
                    "host": "10.0.0.5",
                },
                "findings": [
                    {
                        "rule": "N+1",
                        "name": "n-plus-one",
                        "severity": "warning",
                        "message": "point reads after another query",
                        "evidence": {"calls": 30},
                    }
                ],
            }
        ],
        **extra,
    }


def save(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_reads_classes_servers_and_the_optional_timeline(tmp_path: Path) -> None:
    timeline = {
        "step_s": 60,
        "minutes": [[f"2024-03-01 10:{2 * i:02d}", 1, 0.1] for i in range(30)],
    }
    digest = load_digest(save(tmp_path, "d.json", document(timeline=timeline)))
    assert digest.producer == "govern" and digest.events == 30 and digest.hosts == ["db1", "db2"]
    (cls,) = digest.classes
    assert cls.query_time.p95 == 0.4 and "Query_length" not in cls.metrics
    assert cls.hosts == [("db1", 18), ("db2", 12)] and cls.clients == [("10.0.0.5", 30)]
    assert cls.users[0] == ("app", 20) and cls.flags == {"Full_scan": 3}
    assert cls.histogram[5] == ("100ms", 15) and cls.sample_attributes["query_time"] == 0.5
    assert digest.timeline is not None and sum(digest.timeline.counts.values()) == 30
    assert min(digest.timeline.counts) == 1_709_287_200  # log time read as UTC
    assert digest.notes == ["1 malformed events were skipped (govern digest lists them)."]
    html = digest_report(digest)
    assert "Top hosts" in html and "db2" in html and "n-plus-one" in html
    assert html.count('data-chart="timeseries"') == 2


def test_compares_with_pt_query_digest_ids(tmp_path: Path) -> None:
    pt = {
        "global": {"query_count": 30, "metrics": {"Query_time": {"sum": "1.0"}}},
        "classes": [
            {
                "checksum": QUERY_ID[-16:],
                "fingerprint": "select * from t where id = ?",
                "query_count": 30,
                "metrics": {"Query_time": {"sum": "1.0", "pct_95": "0.1"}},
            }
        ],
    }
    comparison = compare_digests(
        load_digest(save(tmp_path, "pt.json", pt)),
        load_digest(save(tmp_path, "g.json", document())),
    )
    assert [(c.status, c.reasons[0]) for c in comparison.changes] == [
        ("slower", "p95 +300% (100 ms → 400 ms)")
    ]


def test_a_broken_document_names_the_file(tmp_path: Path) -> None:
    broken = document()
    del broken["totals"]
    with pytest.raises(
        UsageError, match=r"b\.json: a govern\.digest document without a valid 'totals'"
    ):
        load_digest(save(tmp_path, "b.json", broken))
