"""The native core behind the digest engine gives the Python engine's JSON
(docs/design/digest-engines.md, "The seam between the engines").

Both engines digest the same inputs and the whole ``govern.digest`` document
(``full_document``: classes, samples and their lines, sequences, leads, single-row
runs, distinct texts, fits, timeline, malformed events) must be identical:

* every log of the shared corpus, serially, in parallel with small segments (the
  runner's stitching of open runs and context across ranges), with a class cap
  below the number of classes, and with a --host label;
* generated odd logs (banners mid-file, header-only events pt reads across,
  administrator commands, cut-short ends, bad Query_time, quotes in VALUES,
  hundreds of connections, values and leads past their caps, non-UTF-8 bytes);
* a slow log recorded from the test MariaDB.

The Python engine runs with the core switched off (``GOVERN_NATIVE=0`` does the
same from the environment).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from govern import native
from govern.digest import native_engine
from govern.digest import segments as segmenting
from govern.digest.document import full_document
from govern.digest.filters import parse_filters
from govern.digest.native_total import NativePartial
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from govern.slowlog import normalize_time
from tests.paths import CORPUS, SLOWLOGS, require_corpus

pytestmark = pytest.mark.skipif(
    not native.available(), reason="native core not built (no cargo) or GOVERN_NATIVE=0"
)

DATA = SLOWLOGS
CORPUS_FILES = (
    sorted(p.relative_to(CORPUS) for p in CORPUS.glob("*/*") if p.suffix != ".md")
    if CORPUS.is_dir()
    else []
)


def document(
    path: Path, monkeypatch: pytest.MonkeyPatch, *, python: bool, **options: Any
) -> dict[str, Any]:
    """``govern.digest`` JSON of one log, by the Python engine or the core."""
    with monkeypatch.context() as patch:
        patch.setattr(native, "_DISABLED", python)
        patch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
        return full_document(digest_paths([str(path)], DigestOptions(**options)))


def assert_engines_agree(path: Path, monkeypatch: pytest.MonkeyPatch, segments: list[int]) -> None:
    reference = document(path, monkeypatch, python=True, jobs=1)
    assert document(path, monkeypatch, python=False, jobs=1) == reference, "serial"
    for segment in segments:
        got = document(path, monkeypatch, python=False, jobs=2, segment=segment)
        assert got == reference, f"parallel, segments of {segment} bytes"
    for options in ({"max_classes": 3}, {"host": "db1"}):
        want = document(path, monkeypatch, python=True, jobs=1, **options)
        assert document(path, monkeypatch, python=False, jobs=1, **options) == want, options


def filter_cases(data: bytes) -> list[dict[str, Any]]:
    """--since/--until/--filter options that cut into this log: times from its own
    ``# Time:`` lines, its first db and user, a fingerprint pattern and a query ID."""

    def filtered(*texts: str, **more: Any) -> dict[str, Any]:
        return {"filters": parse_filters(list(texts)), "filter_texts": list(texts), **more}

    stamps = {normalize_time(raw) for raw in re.findall(rb"^# Time: (.+)$", data, re.M)}
    times = sorted(t for t in stamps if t is not None)
    cases = [filtered("fingerprint~^(select|insert)"), filtered("id!=0", "fingerprint!=*t1*")]
    if times:
        middle, late = times[len(times) // 2], times[3 * len(times) // 4]
        cases += [{"since": middle}, {"since": times[0], "until": late}, {"until": middle}]
    dbs = re.findall(rb"^use `?(\w+)`?;|Schema: `?(\w+)", data, re.M)
    db = next((a or b for a, b in dbs), None)
    if db:
        cases += [filtered(f"db={db.decode()}"), filtered(f"db!={db.decode()}", "db~.")]
        if times:
            cases.append(filtered(f"db={db.decode()}", "id!=0", since=times[len(times) // 3]))
    user = re.search(rb"^# User@Host: (\w+)", data, re.M)
    if user:
        cases.append(filtered(f"user!={user[1].decode()}", "host=*"))
    return cases


def assert_filters_agree(path: Path, monkeypatch: pytest.MonkeyPatch, segments: list[int]) -> None:
    """With filters, the core (ranges that defer their head until the context before them
    is known, merged after it) gives the Python engine's JSON."""
    for options in filter_cases(path.read_bytes()):
        reference = document(path, monkeypatch, python=True, jobs=1, **options)
        shown = {k: v for k, v in options.items() if k != "filters"}
        assert document(path, monkeypatch, python=False, jobs=1, **options) == reference, shown
        for segment in segments:
            got = document(path, monkeypatch, python=False, jobs=2, segment=segment, **options)
            assert got == reference, (shown, segment)


@pytest.mark.parametrize("name", [str(p) for p in CORPUS_FILES] or ["(no corpus)"])
def test_corpus_same_json(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = require_corpus() / name
    small = path.stat().st_size < 200_000
    assert_engines_agree(path, monkeypatch, [700, 5000] if small else [65536, 1_000_000])


@pytest.mark.parametrize("name", [str(p) for p in CORPUS_FILES] or ["(no corpus)"])
def test_corpus_filtered_same_json(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = require_corpus() / name
    small = path.stat().st_size < 200_000
    assert_filters_agree(path, monkeypatch, [700] if small else [65536])


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.log")))
def test_format_samples_same_json(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_engines_agree(DATA / name, monkeypatch, [100, 500])
    assert_filters_agree(DATA / name, monkeypatch, [100])


def odd_log(seed: int) -> bytes:
    """A log with most of what can go wrong in one (deterministic for a seed)."""
    rng = random.Random(seed)
    out: list[bytes] = []
    if rng.random() < 0.5:
        out.append(b"/usr/sbin/mysqld, Version: 5.7.1 (x). started with:\nTcp port: 3306\n")
        out.append(b"Time                 Id Command    Argument\n")
    minute = 0
    hot = seed % 4 == 1  # one class with more values than kept, and more leads
    for i in range(2500 if hot else rng.randint(50, 400)):
        shape = rng.random()
        thread = rng.choice([b"1", b"2", b"3", b"42", str(rng.randint(4, 600)).encode()])
        if rng.random() < 0.3:
            minute += 1
            out.append(
                b"# Time: 2407%02d %2d:%02d:%02d\n"
                % (1 + minute // 1440 % 28, minute // 60 % 24, minute % 60, rng.randint(0, 59))
            )
        elif rng.random() < 0.03:
            out.append(b"# Time: 071318 99:48:27\n")  # unreadable: kept as pt's text
        user = rng.choice([b"app", b"batch", b"u%d" % rng.randint(0, 1500), b"\xff\xfe"])
        out.append(b"# User@Host: %s[%s] @ host%d [10.0.0.%d]\n" % (user, user, i % 3, i % 7))
        qt = rng.choice([b"0.000012", b"1.5", b"0.25", b"12.000001", b"0.000100"])
        if rng.random() < 0.02:
            qt = b"18446744073708.796870.000036"  # a server bug: not a number
        out.append(
            b"# Thread_id: %s  Schema: %s  QC_hit: %s\n"
            % (
                thread,
                rng.choice([b"app", b"`shop`", b"t%d" % (i % 5)]),
                rng.choice([b"Yes", b"No"]),
            )
        )
        out.append(
            b"# Query_time: %s  Lock_time: 0.000%d  Rows_sent: %d  Rows_examined: %d\n"
            % (qt, rng.randint(0, 9), rng.randint(0, 3), rng.randint(0, 10**6))
        )
        out.append(
            b"# Rows_affected: %d  Bytes_sent: %d\n" % (rng.randint(0, 2), rng.randint(0, 99))
        )
        if rng.random() < 0.2:
            out.append(b"use db%d;\n" % rng.randint(0, 3))
        if rng.random() < 0.3:
            out.append(b"SET timestamp=%d;\n" % (1_700_000_000 + i))
        if hot and rng.random() < 0.6:
            out.append(b"# Log_slow_rate_limit: %d\nSELECT hot FROM h WHERE id = %d;\n" % (i, i))
        elif shape < 0.25:
            tuples = b", ".join(
                b"(%d, 'a''b),(c', \"x\\\"),(\")" % n for n in range(rng.randint(1, 4))
            )
            out.append(b"INSERT INTO t%d (a, b, c) VALUES %s;\n" % (i % 3, tuples))
        elif shape < 0.45:
            out.append(b"UPDATE t SET a = %d WHERE id = %d;\n" % (i, rng.randint(0, 9)))
        elif shape < 0.5:
            out.append(b"# administrator command: Quit;\n")
        elif shape < 0.53:
            pass  # header only: pt reads the next piece as an administrator command
        elif shape < 0.55:
            out.append(b"/usr/sbin/mysqld, Version: 5.7.1 (x). started with:\n")
            out.append(b"Tcp port: 3306  Unix socket: /tmp/s\nTime  Id Command  Argument\n")
        elif shape < 0.6:
            out.append(b"SELECT * FROM q%d WHERE x IN (1, 2, 3);\n" % rng.randint(0, 150))
        else:
            out.append(
                b"SELECT c FROM t%d WHERE id = %d /* %s */;\n"
                % (rng.randint(0, 30), rng.randint(0, 5), rng.choice([b"a", b"\xe9", b"b"]))
            )
    text = b"".join(out)
    if seed % 3 == 0:
        text = text[: rng.randint(len(text) // 2, len(text))]  # cut anywhere
    return text


@pytest.mark.parametrize("seed", range(24))
def test_odd_logs_same_json(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / f"odd-{seed}.log"
    path.write_bytes(odd_log(seed))
    assert_engines_agree(path, monkeypatch, [150, 2000])
    assert_filters_agree(path, monkeypatch, [150])


@pytest.mark.server
def test_recorded_mariadb_log_same_json(
    recorded_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = recorded_log
    assert path.stat().st_size > 100_000
    assert_engines_agree(path, monkeypatch, [20_000])
    assert_filters_agree(path, monkeypatch, [20_000])


def many_classes_log(classes: int) -> bytes:
    """Three events a class on 40 connections: runs of a class, leads, single-row
    writes, values of one attribute per class, more classes than the core keeps in
    memory before freezing them (native/src/total.rs FREEZE_ABOVE, 4,096)."""
    rng = random.Random(7)
    out = [b"# Time: 261121 22:42:45\n"]
    names = [bytes(97 + (i // 26**k) % 26 for k in range(3)) for i in range(classes)]
    for rep in range(3):
        for i in range(classes):
            thread = rng.randrange(40)
            query = (
                b"INSERT INTO t_%s (a) VALUES (%d)" % (names[i], rep)
                if i % 5 == 0
                else b"SELECT a FROM t_%s WHERE id = %d" % (names[i], rng.randrange(9))
            )
            for _ in range(1 + (i % 7 == 0)):  # some runs of two
                out.append(
                    b"# User@Host: u%d[u] @ h%d []\n# Thread_id: %d  Schema: s%d\n"
                    b"# Query_time: 0.%06d  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: %d\n"
                    b"# Rows_affected: %d\n%s;\n"
                    % (i % 3, i % 2, thread, rep, rng.randrange(999_999), i % 50, i % 5 == 0, query)
                )
    return b"".join(out)


def test_frozen_classes_same_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.log"
    path.write_bytes(many_classes_log(6000))
    reference = document(path, monkeypatch, python=True, jobs=1)
    assert len(reference["classes"]) == 6000
    assert document(path, monkeypatch, python=False, jobs=1) == reference, "serial"
    got = document(path, monkeypatch, python=False, jobs=2, segment=60_000)
    assert got == reference, "parallel"
    capped = document(path, monkeypatch, python=True, jobs=1, max_classes=5000)
    assert document(path, monkeypatch, python=False, jobs=1, max_classes=5000) == capped


def test_segments_grow_for_few_classes_and_shrink_for_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core's segments start small, grow once the merged part shows few classes,
    shrink once it shows many; the JSON is the Python engine's either way."""
    assert native_engine.native_segment(0, 0) == native_engine.NATIVE_SEGMENT
    assert native_engine.native_segment(405, 32 << 20) == native_engine.NATIVE_SEGMENT_FEW_CLASSES
    assert native_engine.native_segment(5000, 0) == native_engine.NATIVE_SEGMENT_MANY_CLASSES
    for name, value in (
        ("NATIVE_SEGMENT", 4000),
        ("NATIVE_SEGMENT_FEW_CLASSES", 16_000),
        ("NATIVE_SEGMENT_MANY_CLASSES", 1000),
        ("MANY_CLASSES", 50),
    ):
        monkeypatch.setattr(native_engine, name, value)
    chosen: list[int] = []
    policy = native_engine.native_segment

    def spy(classes: int, merged_bytes: int) -> int:
        chosen.append(policy(classes, merged_bytes))
        return chosen[-1]

    monkeypatch.setattr(native_engine, "native_segment", spy)
    for classes, want, never in ((20, 16_000, 1000), (300, 1000, 16_000)):
        path = tmp_path / f"{classes}.log"
        path.write_bytes(many_classes_log(classes) * (400 // classes))
        chosen.clear()
        reference = document(path, monkeypatch, python=True, jobs=1)
        assert document(path, monkeypatch, python=False, jobs=2) == reference, classes
        assert chosen[0] == 4000 and want in chosen and never not in chosen, (classes, chosen)


def test_filtered_digests_run_in_the_core(tmp_path: Path) -> None:
    """--since/--until/--filter no longer send a digest back to the Python engine."""
    path = tmp_path / "odd.log"
    path.write_bytes(odd_log(5))
    options = DigestOptions(jobs=2, segment=150, since="2024-07-01 01:00:00")
    options.filters = parse_filters(["db!=app"])
    digest = digest_paths([str(path)], options)
    assert isinstance(digest.partial, NativePartial)
    assert digest.partial.filtered > 0 and digest.partial.events > 0


def test_an_exception_in_a_filter_is_raised_not_swallowed() -> None:
    data = DATA.joinpath("mariadb.log").read_bytes()

    def refuse(fingerprint: bytes) -> bool:
        raise RuntimeError(f"no: {fingerprint[:10]!r}")

    with pytest.raises(RuntimeError, match="no: "):
        native.range_handle(data, 0, len(data), len(data), 100, None, None, True, 0,
                            keep_class=refuse)  # fmt: skip
