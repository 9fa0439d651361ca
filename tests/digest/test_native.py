"""The native digest core through its Python binding (govern.native) and the runner.

The core's own tests (every corpus event and 30,000 statements against pt-query-digest's
Perl code, ranges merged equal the whole log, classes equal pt's) run with ``cargo test``
in scripts/test, and tests/digest/test_digest_native_conformance.py requires the Python engine's
JSON from it; these check what Python sees: pt's classes, a stream digested as the file,
the class cap, bad input, and the fallback when the extension is not built.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from govern import native
from govern.digest.aggregate import ClassAgg, Fit, Metric, Runs, Sample, close_runs
from govern.digest.decode import CUT_SHORT
from govern.digest.document import full_document
from govern.digest.engine import Context, EngineOptions, digest_range
from govern.digest.native_total import NativePartial
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from tests.digest.support import pt_readable
from tests.paths import require_corpus

pytestmark = pytest.mark.skipif(
    not native.available(), reason="native core not built (no cargo at install time)"
)
if native.available():
    from govern import _native


def pt_classes(path: Path) -> dict[str, tuple[int, float]]:
    """fingerprint -> (count, Query_time sum) from pt-query-digest's JSON report."""
    if shutil.which("pt-query-digest") is None:
        pytest.skip("pt-query-digest is not installed (percona-toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        readable = pt_readable(path, Path(tmp))
        out = subprocess.run(
            ["pt-query-digest", "--no-version-check", "--output", "json", "--limit", "100%",
             str(readable)],
            capture_output=True,
            check=True,
        ).stdout  # fmt: skip
    doc = json.loads(out.decode("utf-8", "surrogateescape"))
    return {
        c["fingerprint"]: (c["query_count"], float(c["metrics"]["Query_time"]["sum"]))
        for c in doc["classes"]
    }


def classes_of(partial: NativePartial) -> dict[str, tuple[int, float]]:
    """fingerprint -> (count, Query_time sum) of the classes that have a Query_time."""
    found = {}
    for index in range(partial.class_count()):
        agg = partial.class_at(index)
        if "Query_time" in agg.metrics:
            found[agg.fingerprint.decode("utf-8", "surrogateescape")] = (
                agg.count,
                agg.metrics["Query_time"].total / 1e6,
            )
    return found


def core_digest(data: bytes) -> NativePartial:
    """``data`` as one range into a total: the binding alone, no runner."""
    total = native.new_total(10_000)
    total.add(native.range_handle(data, 0, len(data), len(data), 10_000, None, None, True, 0), 0, 0)
    total.finish()
    return NativePartial(total)


def test_fingerprint_and_query_id_are_pts() -> None:
    fp = native.fingerprint(b"SELECT * FROM t WHERE a=TRUE and b IN (1,2,3) order by x ASC, y asc")
    assert fp == b"select * from t where a=? and b in(?+) order by x, y"
    assert native.query_id(b"begin") == "8D589AFA4DFAEEED85FFF5AA78E5FF6A"


def test_classes_equal_pt_query_digest() -> None:
    log = require_corpus() / "mariadb" / "mixed-workload.log"
    want = pt_classes(log)
    partial = digest_paths([str(log)], DigestOptions(jobs=2, segment=65_536)).partial
    assert isinstance(partial, NativePartial)
    got = classes_of(partial)
    assert got.keys() == want.keys()
    for fp, (count, total) in want.items():
        assert got[fp][0] == count, fp
        assert got[fp][1] == pytest.approx(total, rel=1e-9, abs=1e-6), fp


def test_stream_equals_file(tmp_path: Path) -> None:
    """A compressed log goes through the stream path (blocks of bytes), a plain one is
    mapped: the same classes and totals."""
    corpus = require_corpus()
    for log in [corpus / "mariadb" / "mixed-workload.log", corpus / "percona" / "slow002.txt"]:
        packed = tmp_path / (log.name + ".gz")
        packed.write_bytes(gzip.compress(log.read_bytes()))
        options = DigestOptions(jobs=2, segment=65_537)
        whole = json.dumps(full_document(digest_paths([str(log)], options))["classes"])
        streamed = json.dumps(full_document(digest_paths([str(packed)], options))["classes"])
        assert streamed.replace(str(packed), str(log)) == whole, log


def test_class_cap_sends_the_rest_to_other() -> None:
    log = require_corpus() / "mariadb" / "mixed-workload.log"
    full = digest_paths([str(log)], DigestOptions(jobs=2)).partial
    capped = digest_paths([str(log)], DigestOptions(jobs=2, max_classes=10)).partial
    assert full.class_count() > 10 and capped.class_count() == 10
    assert capped.other is not None
    kept = sum(capped.class_at(i).count for i in range(10))
    assert kept + capped.other.count == capped.events == full.events


def test_empty_input_is_an_empty_digest() -> None:
    digest = core_digest(b"")
    assert (digest.events, digest.malformed, digest.no_statement, digest.class_count()) == (
        0,
        0,
        0,
        0,
    )
    assert digest.other is None


def test_binary_input_is_one_record_cut_short() -> None:
    # No separator anywhere: one record that the input ends inside, with no statement.
    digest = core_digest(b"\x00\xff\xfe" * 1000)
    assert (digest.events, digest.malformed, digest.no_statement, digest.class_count()) == (
        0,
        1,
        1,
        0,
    )
    assert [(m.line, m.reason) for m in digest.malformed_kept] == [(1, CUT_SHORT)]


def test_an_event_cut_short_is_malformed() -> None:
    digest = core_digest(b"# Time: 071218 11:48:27\n# User@Host: a[a] @ h []\n# Query_time: 1")
    assert (digest.events, digest.malformed, digest.class_count()) == (0, 1, 0)
    assert [(m.line, m.reason) for m in digest.malformed_kept] == [(1, CUT_SHORT)]


def test_bad_query_time_is_counted_and_bad_utf8_kept_as_escapes() -> None:
    content = (
        b"# User@Host: r\xffoot[r\xffoot] @ h\xc3\x28 []\n"
        b"# Query_time: 0.5  Lock_time: 0\nSELECT '\xc3\x28 \xff';\n"
        b"# Query_time: x1  Lock_time: 0\nSELECT 2;\n"
    )
    digest = core_digest(content)
    # "x1" is not a Query_time: that event is counted, not aggregated; it is on line 4.
    assert (digest.events, digest.malformed, digest.class_count()) == (1, 1, 1)
    assert [(m.line, m.reason) for m in digest.malformed_kept] == [
        (4, "Query_time is not a number: x1")
    ]
    agg = digest.class_at(0)
    assert (agg.fingerprint, agg.count) == (b"select ?", 1)
    assert agg.strings == {"user": {"r\\xffoot": 1}, "host": {"h\\xc3(": 1}}
    assert agg.sample is not None and agg.sample.query == b"SELECT '\xc3\x28 \xff'"
    assert agg.sample.user == "r\\xffoot"


def test_figures_have_the_fields_of_the_python_model() -> None:
    """Each figures class of the core has exactly the fields of its aggregate.py twin:
    native_total.py builds one from the other by name. (A sample's plan is govern
    collect's EXPLAIN, never the core's: native_total.py gives None.)"""
    for figures, model, not_from_core in [
        (_native.ClassFigures, ClassAgg, set()),
        (_native.MetricFigures, Metric, set()),
        (_native.SampleFigures, Sample, {"plan"}),
        (_native.RunsFigures, Runs, set()),
        (_native.FitFigures, Fit, set()),
    ]:
        exposed = {name for name in vars(figures) if not name.startswith("_")}
        fields = {f.name for f in dataclasses.fields(model)} - not_from_core
        assert exposed == fields, figures.__name__


def test_every_figure_crosses_the_boundary() -> None:
    """The core's classes, built from its figures, equal the Python engine's ClassAgg
    objects field for field (one range, so no merge is involved), and their totals the
    fields reports read."""
    data = (require_corpus() / "mariadb" / "mixed-workload.log").read_bytes()
    python = digest_range(
        data, 0, len(data), at_start=True, file=0, options=EngineOptions(), context=Context(True)
    ).partial
    close_runs(python)
    core = core_digest(data)
    classes = [core.class_at(i) for i in range(core.class_count())]
    assert len(classes) == len(python.classes) == 59
    for agg in classes:
        assert agg == python.classes[agg.fingerprint], agg.fingerprint
    # The core's totals carry what the reports read of them (count, window, metrics,
    # booleans: total.rs `Total::totals`), the rest left empty.
    core_totals, python_totals = core.totals(), python.totals()
    for name in ("count", "ts_min", "ts_max", "metrics", "booleans"):
        assert getattr(core_totals, name) == getattr(python_totals, name), name
    assert python_totals.sample is not None and core_totals.sample is None


def test_only_a_file_map_has_pages_dropped(tmp_path: Path) -> None:
    """The core drops the pages of a file it mapped itself once digested, and never
    touches other memory: no argument asks for it (a heap buffer past the 64 MB step
    of page dropping comes back unchanged)."""
    event = b"# Query_time: 0.5  Lock_time: 0\nSELECT 1;\n"
    data = event * (70_000_000 // len(event))
    heap = bytearray(data)
    with pytest.raises(TypeError):
        native.range_handle(heap, 0, len(heap), len(heap), 10, None, None, True, 0, release=True)  # type: ignore[call-arg]
    from_heap = native.range_handle(heap, 0, len(heap), len(heap), 10, None, None, True, 0)
    assert heap == data
    path = tmp_path / "slow.log"
    path.write_bytes(data)
    mapped = native.map_file(str(path))
    assert len(mapped) == len(data)
    from_file = native.range_handle(mapped, 0, len(data), len(data), 10, None, None, True, 0)
    assert (from_file.end, from_file.newlines) == (from_heap.end, from_heap.newlines)
    assert mapped_kib(path) < 1024
    mapped.close()
    assert mapped_kib(path) is None


def mapped_kib(path: Path) -> int | None:
    """Resident KiB of this process's mapping of ``path`` (None: not mapped)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for index, line in enumerate(lines):
        if line.endswith(" " + str(path)):
            rss = next(entry for entry in lines[index + 1 :] if entry.startswith("Rss:"))
            return int(rss.split()[1])
    return None


def test_govern_imports_without_the_extension() -> None:
    # A Python that cannot import govern._native sees available() False, not an error.
    code = (
        "import sys; sys.modules['govern._native'] = None\n"
        "from govern import native\n"
        "assert not native.available()\n"
        "try:\n    native.fingerprint(b'x')\nexcept RuntimeError as e:\n    print('fallback:', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("fallback: the native digest core is not available")
