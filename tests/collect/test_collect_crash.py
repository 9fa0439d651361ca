"""``kill -9`` of the collector at 100 random points while the log grows and rotates: the
buckets it leaves, merged, equal one digest of the whole log, event for event."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def start(folder: Path, log: Path, err: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "govern", *arguments(folder, log),
            "--settle", "3600", "--interval", "0.05",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=err.open("wb"),
        start_new_session=True,
    )


def wait_serving(err: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while b"serving" not in err.read_bytes():
        assert process.poll() is None, err.read_text()
        assert time.monotonic() < deadline, "the collector did not start"
        time.sleep(0.01)


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
    kills_during_polls = 0
    for kill in range(KILLS):
        err = tmp_path / f"collect-{kill}.err"
        process = start(tmp_path, log, err)
        wait_serving(err, process)
        delay = chance.uniform(0.0, 0.4)
        for _ in range(4):
            writer.write(per_step)
            if chance.random() < 0.04:
                writer.rotate()
            time.sleep(delay / 4)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert process.returncode == -signal.SIGKILL
        kills_during_polls += b"closed bucket" in err.read_bytes() or b"events" in err.read_bytes()
    while not writer.done:
        writer.write(len(writer.parts))
    past = time.time() - 10
    os.utime(log, (past, past))
    finish = govern(*arguments(tmp_path, log), "--settle", "1", "--close-after", "0", "--once")
    assert finish.returncode == 0, finish.stderr
    assert "lost" not in finish.stderr
    assert writer.rotations >= 2 and len(set(writer.kinds)) >= 2, writer.kinds
    assert kills_during_polls >= KILLS // 2  # most kills landed on a collector at work
    assert_same_events(merged(tmp_path / "buckets"), one_shot(data))
