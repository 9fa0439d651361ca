"""Helpers for the collector's tests: run a collector, read its buckets back, and compare
them with a one-shot ``govern digest`` of the same log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from govern.collect.checkpoint import Checkpoints
from govern.collect.collector import Collector, CollectOptions, PollReport
from govern.collect.files import FollowedLog
from govern.collect.sink import DirectorySink
from govern.collect.source import Source
from govern.digest.result import from_document, full_document, merge_digests
from govern.digest.runner import DigestOptions, digest_bytes, digest_paths
from govern.slowlog import SEPARATOR
from govern.state import StateStore

LABEL = "db1"


def records(data: bytes) -> list[bytes]:
    """A log cut into pt's records (each ends with ``;\\n``, the next starts with ``#``)."""
    cuts = [0]
    at = data.find(SEPARATOR)
    while at >= 0:
        cuts.append(at + 2)
        at = data.find(SEPARATOR, at + 2)
    cuts.append(len(data))
    return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def make_collector(
    tmp: Path,
    sources: list[Source],
    *,
    label: str = LABEL,
    bucket: int = 60,
    close_after: float = 0.0,
    **options: Any,
) -> Collector:
    store = StateStore.open(tmp / "state" / "state.db")
    return Collector(
        sources,
        DirectorySink(tmp / "buckets"),
        Checkpoints(store, label),
        CollectOptions(host=label, bucket_seconds=bucket, close_after=close_after, **options),
    )


def follow(path: Path, **options: Any) -> FollowedLog:
    options.setdefault("settle", 0.3)
    return FollowedLog(str(path), **options)


def poll_all(collector: Collector) -> list[PollReport]:
    """Poll until caught up."""
    reports = [collector.poll()]
    while not reports[-1].caught_up:
        reports.append(collector.poll())
    return reports


def bucket_documents(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def merged(directory: Path) -> dict[str, Any]:
    """Every bucket in ``directory`` merged, as ``govern digest merge`` does."""
    documents = bucket_documents(directory)
    assert documents, f"no bucket in {directory}"
    digests = [from_document(document, "bucket") for document in documents]
    return full_document(merge_digests(digests, max_classes=10_000, order_by="Query_time:sum"))


def one_shot(paths: list[Path] | bytes, label: str = LABEL) -> dict[str, Any]:
    """``govern digest --host LABEL`` of the logs (or of the bytes) in one go."""
    if isinstance(paths, bytes):
        return full_document(digest_bytes(paths, DigestOptions(host=label)))
    return full_document(digest_paths([str(p) for p in paths], DigestOptions(host=label, jobs=1)))


def classes(document: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Per class, everything counted from events: counts, exact sums and sketches, flags,
    db/user/host spreads, the Query_time histogram, servers and first/last times
    (runs of a connection across polls and sample lines are not compared)."""
    return {
        item["id"]: (
            item["count"],
            item["state"]["metrics"],
            item["flags"],
            item["values"],
            item["histogram"],
            item["servers"],
            item["first_seen"],
            item["last_seen"],
            item["sample"]["query_time"] if item["sample"] else None,
        )
        for item in document["classes"]
    }


def events(document: dict[str, Any]) -> int:
    return int(document["totals"]["events"])


def assert_same_events(ours: dict[str, Any], expected: dict[str, Any]) -> None:
    assert ours["totals"] == expected["totals"]
    mine, theirs = classes(ours), classes(expected)
    assert mine.keys() == theirs.keys()
    differing = [key for key in theirs if mine[key] != theirs[key]]
    assert not differing, f"{len(differing)} classes differ, e.g. {differing[0]}"


def govern(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process."""
    env = {**os.environ, **kwargs.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-m", "govern", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        **kwargs,
    )
