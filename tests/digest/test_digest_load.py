"""Saved digests read back (``govern digest merge`` and ``compare``): one loader, checked
against the published schema, one line naming the bad field for anything that does not fit."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from govern.digest.document import to_document
from govern.digest.load import load_report
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from govern.digest.schema import Schema, published
from govern.errors import UsageError
from govern.reports.compare import compare_digests
from govern.reports.digest_html import digest_report
from tests.paths import REPO, SLOWLOGS

SCHEMA_FILE = REPO / "govern" / "schemas" / "govern.digest.schema.json"
EXAMPLE = REPO / "examples" / "digest" / "rules-slow.log.gz"


def govern(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "govern", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    """A real saved digest, as JSON gives it back (the first class has a sample)."""
    document = to_document(digest_paths([str(SLOWLOGS / "mysql57.log")], DigestOptions(jobs=1)))
    return json.loads(json.dumps(document))  # type: ignore[no-any-return]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


#: Damaged documents: (what is done to the saved digest, the path and words of the error).
DAMAGED: list[tuple[str, Any, str]] = [
    (
        "classes as a string",
        lambda d: d.update(classes="every class"),
        '$.classes: expected an array, got a string "every class"',
    ),
    (
        "a count that is a word",
        lambda d: d["classes"][0].update(count="many"),
        '$.classes[0].count: expected an integer, got a string "many"',
    ),
    (
        "a negative count",
        lambda d: d["classes"][0].update(count=-5),
        "$.classes[0].count: expected at least 0, got -5",
    ),
    (
        "a metric as a string",
        lambda d: d["classes"][0]["metrics"].update(Query_time="slow"),
        '$.classes[0].metrics.Query_time: expected an object, got a string "slow"',
    ),
    (
        "a state figure as a string",
        lambda d: d["classes"][1]["state"]["metrics"]["Query_time"].update(sum="250000"),
        '$.classes[1].state.metrics.Query_time.sum: expected an integer, got a string "250000"',
    ),
    (
        "a newer schema version",
        lambda d: d.update(schema_version=999),
        "$.schema_version: govern.digest version 999; this govern reads version 1",
    ),
    (
        "a count that is not whole",
        lambda d: d["totals"].update(events=3.5),
        "$.totals.events: expected an integer, got 3.5",
    ),
    (
        "a missing field",
        lambda d: d["classes"][0].pop("state"),
        "$.classes[0].state: missing",
    ),
    (
        "a histogram of 7 buckets",
        lambda d: d["classes"][0]["histogram"]["Query_time"].pop(),
        "$.classes[0].histogram.Query_time: expected 8 items, got 7",
    ),
    (
        "an ID that is not its fingerprint's",
        lambda d: d["classes"][0].update(id="0" * 32, id16="0" * 16),
        "$.classes[0].id: is not the query ID of its fingerprint",
    ),
    (
        "a sample without its time",
        lambda d: d["classes"][0]["state"].update(sample_query_time=None),
        "$.classes[0].state.sample_query_time: null while the class has a sample",
    ),
    (
        "another sketch",
        lambda d: d["sketch"].update(sub_bucket_bits=5),
        "$.sketch.sub_bucket_bits: expected 7, got 5",
    ),
]

#: Documents JSON itself cannot give Python, as text: (case, text from the saved one, error).
UNREADABLE: list[tuple[str, Any, str]] = [
    (
        "100,000-deep nesting",
        lambda text: text.replace('"sum": 0.25,', f'"sum": {nested(100_000)},', 1),
        "$.classes[0].metrics.Query_time.sum[0][0][0][0][0][0][0]…: nested too deep to read",
    ),
    (
        "a 5,001-digit integer",
        lambda text: text.replace('"count": 1,', f'"count": {"7" * 5001},', 1),
        "$.classes[0].count: an integer of 5,001 digits: too long to read",
    ),
    (
        "a number too large for a float",
        lambda text: text.replace('"query_time": 0.25039', '"query_time": 1e400', 1),
        "$.totals.query_time: expected a finite number, got inf",
    ),
    (
        "a lone surrogate",
        lambda text: text.replace('"name": "', '"name": "\\ud800', 1),
        "$.inputs[0].name: text that is not Unicode (a lone surrogate)",
    ),
    ("not JSON", lambda text: text[:100], ":1: not valid JSON: "),
]


def _save(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _refused_alike(path: Path, good: Path, message: str) -> None:
    """merge and compare refuse it alike: exit 2, one line naming file and field."""
    for args in (
        ("merge", "--format", "json", str(good), str(path)),
        ("compare", str(good), str(path)),
    ):
        proc = govern("digest", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == "" and "Traceback" not in proc.stderr
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"govern: error: {path}") and message in line, (args, line)


@pytest.mark.parametrize(("case", "damage", "message"), DAMAGED, ids=[d[0] for d in DAMAGED])
def test_a_damaged_saved_digest_is_refused_with_the_path_of_its_bad_field(
    saved: dict[str, Any], tmp_path: Path, case: str, damage: Any, message: str
) -> None:
    document = copy.deepcopy(saved)
    damage(document)
    path = _save(tmp_path, "bad.json", json.dumps(document))
    with pytest.raises(UsageError) as refused:
        load_report(str(path))
    assert refused.value.message == f"{path}: {message}"
    good = _save(tmp_path, "good.json", json.dumps(saved))
    _refused_alike(path, good, message)


@pytest.mark.parametrize(("case", "edit", "message"), UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_json_python_cannot_read_is_refused_with_where(
    saved: dict[str, Any], tmp_path: Path, case: str, edit: Any, message: str
) -> None:
    text = json.dumps(saved)
    changed = edit(text)
    assert changed != text, "the edit must find its place in the saved digest"
    path = _save(tmp_path, "bad.json", changed)
    with pytest.raises(UsageError) as refused:
        load_report(str(path))
    assert message in refused.value.message
    good = _save(tmp_path, "good.json", text)
    _refused_alike(path, good, message)


def test_the_published_schema_is_json_schema_and_agrees_with_the_checker(
    saved: dict[str, Any], tmp_path: Path
) -> None:
    """A JSON Schema 2020-12 validator reads the shipped file and judges alike: valid for
    what govern writes, invalid for each damaged document (the checker is stricter only
    where JSON Schema cannot say: an ID is its fingerprint's, a sample has a time)."""
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    merged = json.loads(
        govern("digest", "merge", "--format", "json", _merged_inputs(tmp_path)).stdout
    )
    for document in (saved, merged):
        assert validator.is_valid(document)
        assert published("govern.digest").problem(document) is None
    beyond_json_schema = {"an ID that is not its fingerprint's", "a sample without its time"}
    for case, damage, _ in DAMAGED:
        document = copy.deepcopy(saved)
        damage(document)
        assert validator.is_valid(document) is (case in beyond_json_schema), case


def _merged_inputs(tmp_path: Path) -> str:
    proc = govern("digest", "--format", "json", "--host", "db1", str(SLOWLOGS / "percona.log"))
    return str(_save(tmp_path, "db1.json", proc.stdout))


def test_a_schema_keyword_the_checker_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError, match=r"does not know: \{.uniqueItems.\}"):
        Schema({"type": "array", "uniqueItems": True})


def test_a_saved_digest_reads_into_the_report_model_with_servers_and_timeline(
    tmp_path: Path,
) -> None:
    saved = []
    for host in ("db1", "db2"):
        proc = govern("digest", "--format", "json", "--host", host, str(EXAMPLE))
        saved.append(str(_save(tmp_path, f"{host}.json", proc.stdout)))
    merged = govern("digest", "merge", "--format", "json", *saved)
    report = load_report(str(_save(tmp_path, "merged.json", merged.stdout)))
    document = json.loads(merged.stdout)
    assert report.producer == "govern" and report.hosts == ["db1", "db2"]
    assert report.events == document["totals"]["events"] == 2 * 7304
    first = report.classes[0]
    assert first.id == document["classes"][0]["id"] and first.count == 2 * 1200
    assert first.servers == {"db1": 1200, "db2": 1200}
    assert first.query_time.p95 == document["classes"][0]["metrics"]["Query_time"]["p95"]
    assert report.timeline is not None and sum(report.timeline.counts.values()) == report.events
    assert report.rules is not None and report.rules.findings > 0
    html = digest_report(report)
    assert "Top hosts" in html and "db2" in html and "single-row-run" in html
    assert html.count('data-chart="timeseries"') == 2


def test_pt_query_digest_json_reads_into_the_same_model(
    saved: dict[str, Any], tmp_path: Path
) -> None:
    """pt writes numbers as strings and 16-hex IDs; merge cannot use it (no state)."""
    second = saved["classes"][1]
    pt = {
        "global": {"query_count": 2, "metrics": {"Query_time": {"sum": "0.0001"}}},
        "classes": [
            {
                "checksum": second["id16"],
                "fingerprint": second["fingerprint"],
                "query_count": 2,
                "metrics": {"Query_time": {"sum": "0.0001", "pct_95": "0.00005"}},
            }
        ],
    }
    path = _save(tmp_path, "pt.json", json.dumps(pt))
    after = load_report(str(_save(tmp_path, "g.json", json.dumps(saved))))
    comparison = compare_digests(load_report(str(path)), after, min_time=0.0)
    assert [(c.status, c.reasons[0]) for c in comparison.changes if c.status != "new"] == [
        ("slower", "p95 +320% (50 µs → 210 µs)")
    ]
    proc = govern("digest", "merge", str(path))
    assert proc.returncode == 2
    assert "a pt-query-digest digest cannot be merged" in proc.stderr
