"""Slow-log files followed: appends cut anywhere, rotations of every kind, compressed
rotated files, JSON-wrapped logs; every event counted once, as one digest of the log."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.collect.support import (
    assert_same_events,
    bucket_documents,
    events,
    follow,
    make_collector,
    merged,
    one_shot,
    poll_all,
    records,
)
from tests.paths import SLOWLOGS, require_corpus


def corpus_log() -> bytes:
    return (require_corpus() / "mariadb" / "mixed-workload.log").read_bytes()


def quiet(path: Path, settle: float = 0.3) -> None:
    """Let a followed file look idle (its last record is then read too)."""
    past = time.time() - settle - 1
    os.utime(path, (past, past))


def test_appends_cut_anywhere_give_the_one_shot_digest(tmp_path: Path) -> None:
    data = corpus_log()
    log = tmp_path / "slow.log"
    log.write_bytes(b"")
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        written = 0
        step = 0
        while written < len(data):
            step += 1
            size = (step * 7919) % 300_000 + 1  # cuts inside records, headers, statements
            with log.open("ab") as handle:
                handle.write(data[written : written + size])
            written += size
            collector.poll()
        quiet(log)
        poll_all(collector)
        assert not collector.open_buckets or collector.poll().caught_up
    documents = bucket_documents(tmp_path / "buckets")
    assert len(documents) > 2  # the log spans several 5 s buckets
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_the_record_being_written_waits_until_the_log_is_quiet(tmp_path: Path) -> None:
    data = (SLOWLOGS / "mariadb.log").read_bytes()
    whole = records(data)
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(whole[:-1]) + whole[-1][:-20])  # the last one half written
    with make_collector(tmp_path, [follow(log, settle=3600)]) as collector:
        first = collector.poll()
        with log.open("ab") as handle:
            handle.write(whole[-1][-20:])
        second = collector.poll()
        quiet(log, 3600)
        third = collector.poll()
    # pt's records: the one before the last holds FLUSH SLOW LOGS, MariaDB's start banner
    # and the event after it, two events for the digest (the banner ends a record).
    assert first.events == events(one_shot(b"".join(whole[:-1]))) == len(whole)
    assert second.events == 0  # complete now, but nothing follows it yet
    assert third.events == 1
    assert third.sources[0].behind == 0


def test_a_banner_is_a_bucket_boundary_as_it_is_a_record_boundary(tmp_path: Path) -> None:
    """FLUSH SLOW LOGS (22:39:12) is followed by MariaDB's start banner, then the next
    second's events: the banner ends FLUSH's record, so FLUSH stays in its own bucket
    and the banner is counted once, with the events after it."""
    data = (SLOWLOGS / "mariadb.log").read_bytes()
    log = tmp_path / "slow.log"
    log.write_bytes(data)
    quiet(log)
    with make_collector(tmp_path, [follow(log)], bucket=1) as collector:
        poll_all(collector)
        found = merged(tmp_path / "buckets", collector)
    buckets = {
        document["collect"]["bucket"]["start"]: document
        for document in bucket_documents(tmp_path / "buckets")
    }
    first, second = buckets["2026-11-21 22:39:12"], buckets["2026-11-21 22:39:13"]
    assert "flush slow logs" in [item["fingerprint"] for item in first["classes"]]
    assert (events(first), first["totals"]["banners"]) == (3, 0)
    assert (events(second), second["totals"]["banners"]) == (2, 1)
    assert_same_events(found, one_shot(data))


def rotate_by_rename(log: Path, suffix: str) -> Path:
    rotated = log.with_name(log.name + suffix)
    os.rename(log, rotated)
    return rotated


def test_rename_rotation_reads_the_old_file_to_its_end_first(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    third = len(parts) // 3
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[:third]))
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        collector.poll()
        # logrotate renames and creates an empty log; the server keeps writing the
        # renamed file until FLUSH SLOW LOGS, then writes the new one.
        old = rotate_by_rename(log, ".1")
        log.write_bytes(b"")
        with old.open("ab") as handle:
            handle.write(b"".join(parts[third : 2 * third]))
        collector.poll()
        # A second rotation before the collector saw the first one end: .1 -> .2
        os.rename(old, log.with_name("slow.log.2"))
        os.rename(log, old)
        log.write_bytes(b"".join(parts[2 * third :]))
        quiet(log)
        reports = poll_all(collector)
    assert not reports[-1].problems
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_copytruncate_reads_the_rest_from_the_copy(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    half = len(parts) // 2
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[: half // 2]))
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        collector.poll()
        with log.open("ab") as handle:  # written after the last read...
            handle.write(b"".join(parts[half // 2 : half]))
        shutil.copyfile(log, log.with_name("slow.log.1"))  # ... copied, then truncated
        with log.open("r+b") as handle:
            handle.truncate(0)
        with log.open("ab") as handle:
            handle.write(b"".join(parts[half:]))
        quiet(log)
        reports = poll_all(collector)
    assert not [p for r in reports for p in r.problems]
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_copytruncate_between_the_look_and_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """logrotate cuts the file back after the collector looked at it and before it read,
    and the server writes again past the old position: what is there now is not the rest
    of the old file (it is in the copy)."""
    data = corpus_log()
    parts = records(data)
    half = len(parts) // 2
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[: half // 4]))
    source = follow(log)
    look = source.refresh

    def look_then_rotate(reading: Any) -> bool:
        changed = look(reading)
        monkeypatch.setattr(source, "refresh", look)  # once
        shutil.copyfile(log, log.with_name("slow.log.1"))
        with log.open("r+b") as handle:
            handle.truncate(0)
        with log.open("ab") as handle:
            handle.write(b"".join(parts[half:]))
        quiet(log)
        return changed

    with make_collector(tmp_path, [source], bucket=5) as collector:
        collector.poll()
        with log.open("ab") as handle:
            handle.write(b"".join(parts[half // 4 : half]))
        monkeypatch.setattr(source, "refresh", look_then_rotate)
        reports = poll_all(collector)
    assert not [p for r in reports for p in r.problems]
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_copytruncate_then_rename_before_the_collector_looked(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    quarter = len(parts) // 4
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[:quarter]))
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        collector.poll()
        with log.open("ab") as handle:
            handle.write(b"".join(parts[quarter : 2 * quarter]))
        shutil.copyfile(log, log.with_name("slow.log.1"))  # copytruncate ...
        with log.open("r+b") as handle:
            handle.truncate(0)
        with log.open("ab") as handle:
            handle.write(b"".join(parts[2 * quarter : 3 * quarter]))
        os.rename(log, log.with_name("slow.log.2"))  # ... then a rename, unseen between
        log.write_bytes(b"".join(parts[3 * quarter :]))
        quiet(log)
        reports = poll_all(collector)
    assert not [p for r in reports for p in r.problems]
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_a_rotated_file_compressed_before_its_end_was_read(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    half = len(parts) // 2
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[: half // 2]))
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        collector.poll()
        with log.open("ab") as handle:
            handle.write(b"".join(parts[half // 2 : half]))
        # logrotate with compress (no delaycompress): renamed, gzipped, original removed
        rotated = log.with_name("slow.log.1.gz")
        rotated.write_bytes(gzip.compress(log.read_bytes()))
        log.unlink()
        log.write_bytes(b"".join(parts[half:]))
        quiet(log)
        reports = poll_all(collector)
        again = collector.poll()  # the .gz is read once, never again
    assert not [p for r in reports for p in r.problems]
    assert again.events == 0
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_backfill_reads_rotated_files_once_oldest_first(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    cuts = [0, len(parts) // 4, len(parts) // 2, 3 * len(parts) // 4, len(parts)]
    pieces = [b"".join(parts[a:b]) for a, b in itertools.pairwise(cuts)]
    log = tmp_path / "slow.log"
    names = ["slow.log.3.gz", "slow.log.2.gz", "slow.log.1", "slow.log"]
    for age, (name, piece) in enumerate(zip(names, pieces, strict=True)):
        path = tmp_path / name
        path.write_bytes(gzip.compress(piece) if name.endswith(".gz") else piece)
        stamp = time.time() - 1000 + age * 100
        os.utime(path, (stamp, stamp))
    with make_collector(tmp_path, [follow(log, backfill=True)], bucket=5) as collector:
        poll_all(collector)
        again = collector.poll()
    assert again.events == 0
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_a_rotated_file_that_vanished_is_reported_not_ignored(tmp_path: Path) -> None:
    parts = records(corpus_log())
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[:100]))
    with make_collector(tmp_path, [follow(log)]) as collector:
        collector.poll()
        with log.open("ab") as handle:
            handle.write(b"".join(parts[100:200]))
        log.unlink()  # rotated and deleted before the collector looked again
        log.write_bytes(b"".join(parts[200:300]))
        quiet(log)
        report = collector.poll()
    (problem,) = report.problems
    # The new file may even reuse the deleted one's inode: then it looks truncated.
    assert "rotated away and not found" in problem or "truncated in place" in problem
    assert "is lost" in problem
    assert report.events == one_shot(b"".join(parts[200:300]))["totals"]["events"]


def test_positions_survive_a_restart(tmp_path: Path) -> None:
    data = corpus_log()
    parts = records(data)
    log = tmp_path / "slow.log"
    log.write_bytes(b"".join(parts[: len(parts) // 2]))
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        first = collector.poll()
    with log.open("ab") as handle:
        handle.write(b"".join(parts[len(parts) // 2 :]))
    quiet(log)
    with make_collector(tmp_path, [follow(log)], bucket=5) as collector:
        reports = poll_all(collector)
    assert first.events + sum(r.events for r in reports) == one_shot(data)["totals"]["events"]
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_a_second_collector_with_the_same_label_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes((SLOWLOGS / "mariadb.log").read_bytes())
    with make_collector(tmp_path, [follow(log)]):
        second = make_collector(tmp_path, [follow(log)])
        with pytest.raises(Exception, match="another govern collect"):
            second.open()


# --- JSON-wrapped logs ---------------------------------------------------------------------


def docker_lines(data: bytes) -> bytes:
    """Docker's json-file driver: one JSON object per line of the log."""
    lines = data.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    return b"".join(
        json.dumps({"log": line, "stream": "stdout", "time": "2026-11-25T10:00:00Z"}).encode()
        + b"\n"
        for line in lines
    )


def cloudwatch_lines(data: bytes) -> bytes:
    """A CloudWatch Logs export: one JSON object per event, the entry in ``message``."""
    return b"".join(
        json.dumps({"timestamp": 1795300752000, "message": entry.decode().rstrip("\n")}).encode()
        + b"\n"
        for entry in records(data)
    )


@pytest.mark.parametrize(("wrap", "field"), [(docker_lines, "log"), (cloudwatch_lines, "message")])
def test_json_wrapped_logs_unwrap_to_the_same_events(tmp_path: Path, wrap, field) -> None:  # type: ignore[no-untyped-def]
    data = corpus_log()
    wrapped = wrap(data)
    log = tmp_path / "slow.jsonl"
    log.write_bytes(b"")
    with make_collector(tmp_path, [follow(log, json_field=field)], bucket=5) as collector:
        for start in range(0, len(wrapped), 400_001):  # cut inside JSON lines too
            with log.open("ab") as handle:
                handle.write(wrapped[start : start + 400_001])
            collector.poll()
        quiet(log)
        reports = poll_all(collector)
    assert not [p for r in reports for p in r.problems]
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))


def test_json_lines_without_the_field_are_counted_and_named(tmp_path: Path) -> None:
    data = (SLOWLOGS / "mariadb.log").read_bytes()
    wrapped = docker_lines(data).splitlines(keepends=True)
    wrapped.insert(3, b"not json at all\n")
    wrapped.insert(6, b'{"stream": "stderr"}\n')
    log = tmp_path / "slow.jsonl"
    log.write_bytes(b"".join(wrapped))
    quiet(log)
    source = follow(log, json_field="log")
    with make_collector(tmp_path, [source]) as collector:
        report = collector.poll()
    assert report.problems == [
        f"{log}:4: skipped: not JSON (Expecting value)",
        f"{log}:7: skipped: no field log",
    ]
    assert source.skipped_lines == 2
    assert report.events == one_shot(data)["totals"]["events"]
