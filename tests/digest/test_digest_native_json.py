"""The class documents the native core writes as JSON (native/src/document.rs) are the
bytes document.py + ``json.dumps`` write: ``govern digest --format json`` piped, against
the same document built in Python, on every corpus log, the format samples, the odd logs
and 6,000 classes; with the digest rules' findings put in; and the core writes (not
leaves to Python) every class of the logs whose text is UTF-8."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from govern import native
from govern.digest import segments as segmenting
from govern.digest.classes import DocumentFrame
from govern.digest.document import build_document, full_document
from govern.digest.native_total import NativePartial
from govern.digest.options import DigestOptions
from govern.digest.result import Digest, query_time_of, window_of
from govern.digest.runner import digest_paths
from govern.output import dumps, print_json
from govern.rules.digest import DigestRuleOptions, check_document
from tests.digest.test_digest_native_conformance import (
    CORPUS_FILES,
    DATA,
    many_classes_log,
    odd_log,
)
from tests.paths import CORPUS, require_corpus

pytestmark = pytest.mark.skipif(
    not native.available(), reason="native core not built (no cargo) or GOVERN_NATIVE=0"
)


def digest_of(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Digest:
    with monkeypatch.context() as patch:
        patch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
        digest = digest_paths([str(path)], DigestOptions(**options))
    assert isinstance(digest.partial, NativePartial)
    return digest


def written_by_core(digest: Digest) -> tuple[str, str, int]:
    """The document as `govern digest` writes it (piped), as Python writes it, and how
    many classes the core left to Python."""
    out = io.StringIO()
    print_json(build_document(digest), out)
    totals = digest.partial.totals()
    _, _, seconds = window_of(totals)
    frame = DocumentFrame(
        query_time_of(totals), seconds, tuple(source.name for source in digest.sources)
    )
    ranked, _ = digest.keys()
    left = sum(text is None for text in digest.partial.class_json(ranked, frame))
    return out.getvalue(), dumps(full_document(digest)) + "\n", left


def assert_same(
    path: Path, monkeypatch: pytest.MonkeyPatch, all_written: bool, **options: Any
) -> None:
    got, want, left = written_by_core(digest_of(path, monkeypatch, **options))
    assert got == want
    if all_written:
        assert left == 0


@pytest.mark.parametrize("name", [str(p) for p in CORPUS_FILES])
def test_corpus_classes_written_by_the_core(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    require_corpus()
    path = CORPUS / name
    utf8 = _utf8(path)
    assert_same(path, monkeypatch, utf8, jobs=1)
    assert_same(path, monkeypatch, utf8, jobs=2, segment=500, max_classes=3, host="db1")


def _utf8(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return path.suffix != ".gz"


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.log")))
def test_format_samples_written_by_the_core(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / name
    assert_same(path, monkeypatch, _utf8(path), jobs=1)


@pytest.mark.parametrize("seed", range(24))
def test_odd_logs_written_by_the_core(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"odd-{seed}.log"
    path.write_bytes(odd_log(seed))
    assert_same(path, monkeypatch, _utf8(path), jobs=1)
    assert_same(path, monkeypatch, False, jobs=2, segment=150, max_classes=3)


def test_many_classes_written_by_the_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.log"
    path.write_bytes(many_classes_log(6000))
    assert_same(path, monkeypatch, True, jobs=2, segment=60_000)
    assert_same(path, monkeypatch, True, jobs=1, max_classes=5000)


def test_findings_put_into_the_core_s_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest rules' findings go into the core's text as Python would put them."""
    require_corpus()
    digest = digest_of(CORPUS / "mariadb" / "mixed-workload.log", monkeypatch, jobs=1)
    document = build_document(digest)
    found = check_document(document, DigestRuleOptions())
    found.annotate(document)
    out = io.StringIO()
    print_json(document, out)
    reference = full_document(digest)
    found.annotate(reference)
    assert sum(bool(item["findings"]) for item in reference["classes"]) >= 3
    assert out.getvalue() == dumps(reference) + "\n"
