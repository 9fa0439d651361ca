"""``kill -9`` of the collector at 100 random points while the log grows and rotates: the
buckets it leaves, merged, equal one digest of the whole log, event for event."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from govern.collect.collector import PollReport
from govern.collect.service import serve
from govern.collect.setup import CollectRequest, build_collector
from tests.collect.support import assert_same_events, govern, merged, one_shot, records
from tests.paths import require_corpus

KILLS = 100


class Writer:
    """The server's side: appends the log in pieces cut anywhere, and rotates it the three
    ways logrotate does, always between two records (a server never splits one)."""

    def __init__(self, log: Path, data: bytes, seed: int) -> None:
        self.log = log
        self.parts = records(data)
        self.record = 0  # next record to write
        self.pending = b""  # the rest of a record cut in two
        self.random = random.Random(seed)
        self.rotations = 0
        self.kinds: list[str] = []
        log.write_bytes(b"")

    @property
    def done(self) -> bool:
        return self.record >= len(self.parts) and not self.pending

    def write(self, count: int) -> None:
        """About ``count`` records, the last one perhaps cut in the middle."""
        with self.log.open("ab") as handle:
            handle.write(self.pending)
            self.pending = b""
            end = min(len(self.parts), self.record + count)
            handle.write(b"".join(self.parts[self.record : end]))
            self.record = end
            if self.record < len(self.parts) and self.random.random() < 0.7:
                whole = self.parts[self.record]
                cut = self.random.randint(1, len(whole) - 1)
                handle.write(whole[:cut])
                self.pending = whole[cut:]
                self.record += 1

    def finish_record(self) -> None:
        with self.log.open("ab") as handle:
            handle.write(self.pending)
        self.pending = b""

    def rotate(self) -> None:
        self.finish_record()
        self.rotations += 1
        kind = self.random.choice(["rename", "copytruncate", "gzip"])
        self.kinds.append(kind)
        rotated = self.log.with_name(f"slow.log.{self.rotations}")
        if kind == "copytruncate":
            shutil.copyfile(self.log, rotated)
            with self.log.open("r+b") as handle:
                handle.truncate(0)
            return
        os.rename(self.log, rotated)
        # The server writes the renamed file until FLUSH SLOW LOGS, then a new one.
        self.log, old = rotated, self.log
        self.write(self.random.randint(0, 20))
        self.finish_record()
        self.log = old
        self.log.write_bytes(b"")
        if kind == "gzip":
            packed = rotated.with_name(rotated.name + ".gz")
            temporary = rotated.with_name(".compressing")
            temporary.write_bytes(gzip.compress(rotated.read_bytes()))
            os.rename(temporary, packed)
            rotated.unlink()


def arguments(folder: Path, log: Path) -> list[str]:
    """One collector: 5 s buckets closed only as the log moves past them."""
    return [
        "collect", str(log), "--to", str(folder / "buckets"), "--state",
        str(folder / "state.db"), "--label", "db1", "--bucket", "5s", "--close-after", "3650d",
    ]  # fmt: skip


def serve_in_a_child(folder: Path, log: Path, polls: Path) -> int:
    """``govern collect LOG --interval 0.05`` (what the command builds and runs) in a forked
    process: it starts at once, so the kills land on polls, not on Python's start-up."""
    pid = os.fork()
    if pid:
        return pid
    try:
        request = CollectRequest(
            logs=[str(log)],
            to=str(folder / "buckets"),
            host="db1",
            bucket_seconds=5,
            close_after=3650 * 86400,
            settle=3600,
            state_path=str(folder / "state.db"),
            commit_every=0,  # every poll commits: the kills land between and in commits
        )
        collector, _ = build_collector(request)
        with collector, polls.open("a") as done:

            def on_poll(report: PollReport) -> None:
                done.write(json.dumps([report.events, report.problems]) + "\n")
                done.flush()

            serve(collector, 0.05, on_poll)
    finally:
        os._exit(1)


@pytest.mark.slow
def test_kill_9_at_100_random_points_neither_loses_nor_double_counts(tmp_path: Path) -> None:
    data = (require_corpus() / "mariadb" / "mixed-workload.log").read_bytes()
    log = tmp_path / "slow.log"
    writer = Writer(log, data, seed=20261125)
    chance = random.Random(7)
    per_step = max(1, len(writer.parts) // (KILLS * 4))
    # The first run of a collector starts at the log as it finds it: let it find the
    # log before the server writes (rotated files it never knew are --backfill's).
    first = govern(*arguments(tmp_path, log), "--once")
    assert first.returncode == 0, first.stderr
    polls = tmp_path / "polls"
    polls.write_text("")
    for _ in range(KILLS):
        pid = serve_in_a_child(tmp_path, log, polls)
        delay = chance.uniform(0.0, 1.2)
        for _ in range(4):
            writer.write(per_step)
            if chance.random() < 0.04:
                writer.rotate()
            time.sleep(delay / 4)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    while not writer.done:
        writer.write(len(writer.parts))
    past = time.time() - 10
    os.utime(log, (past, past))
    finish = govern(*arguments(tmp_path, log), "--settle", "1", "--close-after", "0", "--once")
    assert finish.returncode == 0, finish.stderr
    assert "lost" not in finish.stderr
    assert writer.rotations >= 2 and len(set(writer.kinds)) >= 2, writer.kinds
    committed = [json.loads(line) for line in polls.read_text().splitlines()]
    # Many kills fell between polls, many in one (a poll of a backlog takes a while): the
    # children committed work of their own, the last run did not do it all.
    assert sum(1 for events, _ in committed if events) >= KILLS // 4
    assert [problems for _, problems in committed if problems] == []
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))
