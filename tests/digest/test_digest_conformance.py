"""govern digest finds pt-query-digest's classes, serially and in parallel.

Oracle: ``pt-query-digest --no-version-check --output json --limit 100% FILE``.
Inputs: every log of the shared corpus, the format samples in tests/data, and a
slow log recorded from the test MariaDB under a mixed workload.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from govern.digest import segments as segmenting
from tests.digest.support import assert_same_classes, govern_document
from tests.paths import CORPUS, SLOWLOGS, require_corpus

DATA = SLOWLOGS
CORPUS_FILES = sorted(p.relative_to(CORPUS) for p in CORPUS.glob("*/*")) if CORPUS.is_dir() else []
SAMPLES = sorted(p.name for p in DATA.glob("*.log"))


@pytest.mark.parametrize("name", [str(p) for p in CORPUS_FILES] or ["(no corpus)"])
def test_corpus_classes_equal_pt(name: str) -> None:
    assert_same_classes(require_corpus() / name)


@pytest.mark.parametrize("name", SAMPLES)
def test_format_samples_equal_pt(name: str) -> None:
    assert_same_classes(DATA / name)


@pytest.mark.server
def test_recorded_mariadb_log_equals_pt(recorded_log: Path) -> None:
    assert recorded_log.stat().st_size > 100_000
    assert_same_classes(recorded_log)


def _parallel_equals_serial(
    path: Path, monkeypatch: pytest.MonkeyPatch, segments: tuple[int, ...]
) -> None:
    serial = govern_document(path, jobs=1)
    monkeypatch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
    for segment in segments:
        assert govern_document(path, jobs=2, segment=segment) == serial, f"segment {segment}"


@pytest.mark.parametrize("name", [str(p) for p in CORPUS_FILES] or ["(no corpus)"])
def test_corpus_parallel_equals_serial(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = require_corpus() / name
    small = path.stat().st_size < 200_000
    _parallel_equals_serial(path, monkeypatch, (300, 4000) if small else (65536, 1_000_000))


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_parallel_equals_serial(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _parallel_equals_serial(DATA / name, monkeypatch, (100, 500))


@pytest.mark.server
def test_recorded_parallel_equals_serial_and_filters(
    recorded_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _parallel_equals_serial(recorded_log, monkeypatch, (20_000,))
    # With filters that need inherited values, segments defer their first events.
    options: dict[str, Any] = {"filter_texts": ["db=app"], "since": "2000-01-01 00:00:00"}
    from govern.digest.filters import parse_filters

    options["filters"] = parse_filters(options["filter_texts"])
    serial = govern_document(recorded_log, jobs=1, **options)
    assert serial["totals"]["events"] > 0
    assert govern_document(recorded_log, jobs=2, segment=20_000, **options) == serial


def test_gzip_stream_equals_plain_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = DATA / "mariadb.log"
    packed = tmp_path / "mariadb.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    expected = govern_document(plain, jobs=1)
    for jobs, segment in ((1, 32 << 20), (2, 200)):
        monkeypatch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
        document = govern_document(packed, jobs=jobs, segment=segment)
        assert document["classes"] == [
            item | {"sample": item["sample"] | {"file": str(packed)}}
            for item in expected["classes"]
        ]


def test_several_inputs_parallel_equals_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inherited ts/db and runs carry from one file to the next, in parallel too."""
    from govern.digest.document import to_document
    from govern.digest.filters import parse_filters
    from govern.digest.options import DigestOptions
    from govern.digest.runner import digest_paths

    packed = tmp_path / "percona.log.gz"
    packed.write_bytes(gzip.compress((DATA / "percona.log").read_bytes()))
    files = [str(p) for p in sorted(DATA.glob("*.log"))] + [str(packed)]
    for extra in ({}, {"filters": parse_filters(["db=shop"]), "since": "2000-01-01 00:00:00"}):
        serial = to_document(digest_paths(files, DigestOptions(jobs=1, **extra)))  # type: ignore[arg-type]
        monkeypatch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
        parallel = to_document(digest_paths(files, DigestOptions(jobs=2, segment=300, **extra)))  # type: ignore[arg-type]
        assert parallel == serial
        assert serial["totals"]["events"] > 0
