"""The native digest core through its Python binding (govern.native).

The core's own differential tests (every corpus event against pt-query-digest's Perl
code, exact parallel and streamed parts) run with ``cargo test`` in scripts/test; these
check what Python sees: pt's classes, the same digest from a file and from a stream,
bad input, and the fallback when the extension is not built.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import require_corpus

from govern import native

pytestmark = pytest.mark.skipif(
    not native.available(), reason="native core not built (no cargo at install time)"
)


def pt_classes(path: Path) -> dict[str, tuple[int, float]]:
    """fingerprint -> (count, Query_time sum) from pt-query-digest's JSON report."""
    if shutil.which("pt-query-digest") is None:
        pytest.skip("pt-query-digest is not installed (percona-toolkit)")
    out = subprocess.run(
        ["pt-query-digest", "--no-version-check", "--output", "json", "--limit", "100%", str(path)],
        capture_output=True,
        check=True,
    ).stdout
    doc = json.loads(out.decode("utf-8", "surrogateescape"))
    return {
        c["fingerprint"]: (c["query_count"], float(c["metrics"]["Query_time"]["sum"]))
        for c in doc["classes"]
    }


def native_classes(digest: Any) -> dict[str, tuple[int, float]]:
    return {
        fp.decode("utf-8", "surrogateescape"): (count, total / 1e6)
        for fp, count, total in digest.summary()
        if total is not None
    }


def test_fingerprint_and_query_id_are_pts() -> None:
    fp = native.fingerprint(b"SELECT * FROM t WHERE a=TRUE and b IN (1,2,3) order by x ASC, y asc")
    assert fp == b"select * from t where a=? and b in(?+) order by x, y"
    assert native.query_id(b"begin") == "8D589AFA4DFAEEED85FFF5AA78E5FF6A"


def test_classes_equal_pt_query_digest() -> None:
    log = require_corpus() / "mariadb" / "mixed-workload.log"
    want = pt_classes(log)
    got = native_classes(native.digest_file(log, threads=2))
    assert got.keys() == want.keys()
    for fp, (count, total) in want.items():
        assert got[fp][0] == count, fp
        assert got[fp][1] == pytest.approx(total, rel=1e-9, abs=1e-6), fp


def test_stream_equals_file(tmp_path: Path) -> None:
    corpus = require_corpus()
    for log in [corpus / "mariadb" / "mixed-workload.log", corpus / "percona" / "slow002.txt"]:
        data = log.read_bytes()
        whole = native.as_dict(native.digest_file(log, threads=2))
        pieces = (data[i : i + 65_537] for i in range(0, len(data), 65_537))
        assert native.as_dict(native.digest_stream(pieces)) == whole, log


def test_gzip_input_through_the_stream() -> None:
    log = require_corpus() / "percona" / "slow040.txt.gz"
    with gzip.open(log, "rb") as f:
        digest = native.as_dict(native.digest_stream(iter(lambda: f.read(1 << 16), b"")))
    assert digest["events"] > 0
    assert sum(c["count"] for c in digest["classes"]) + digest["other"]["count"] == digest["events"]


def test_class_cap_sends_the_rest_to_other() -> None:
    log = require_corpus() / "mariadb" / "mixed-workload.log"
    full = native.as_dict(native.digest_file(log))
    capped = native.as_dict(native.digest_file(log, max_classes=10))
    assert [c["fingerprint"] for c in capped["classes"]] == [
        c["fingerprint"] for c in full["classes"]
    ][:10]
    assert capped["other"]["count"] == sum(c["count"] for c in full["classes"][10:])


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff\xfe" * 1000,
        b"# Time: 071218 11:48:27\n# User@Host: a[a] @ h []\n# Query_time: 1",  # truncated
        b"# Query_time: 0.5  Lock_time: 0\nSELECT '\xc3\x28 \xff';\n# Query_time: x1  Lock_time: 0\nSELECT 2;\n",
    ],
    ids=["empty", "binary", "truncated", "broken-utf8"],
)
def test_bad_input_is_counted_not_fatal(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    digest = native.as_dict(native.digest_file(path))
    assert native.as_dict(native.digest_stream([content])) == digest
    if content.startswith(b"# Query_time: 0.5"):
        assert digest["events"] == 1
        # "x1" is not a Query_time: that event is counted, not aggregated; its record starts at byte 48.
        assert digest["malformed"] == (1, 48)


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=r"nope\.log"):
        native.digest_file(tmp_path / "nope.log")


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
