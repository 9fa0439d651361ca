"""The collector: sources read into time buckets of query classes, closed buckets to a sink.

:meth:`Collector.poll` is one round: read what every source has that is new (up
to a budget), cut it into buckets, digest it into the open buckets, close the
buckets every source has moved past (or that ended long enough ago while every
source is caught up), hand the closed ones to the sink and commit the positions
with the open buckets (govern/collect/checkpoint.py). ``govern collect --once``
polls until the sources are caught up; the service polls on an interval.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from govern import __version__
from govern.collect.buckets import Buckets, route
from govern.collect.checkpoint import Checkpoints
from govern.collect.digesting import MAX_CLASSES, Accumulator, Aggregate, Context
from govern.collect.sink import Sink
from govern.collect.source import Classes, Progress, Source, Text
from govern.errors import ConfigError

#: Bytes (or rows' worth of text) read from all sources in one poll; more waits for the next.
POLL_BUDGET = 512 * 1024 * 1024
#: A service commits its reads at most this often: a commit turns the classes read into
#: Python objects and saves the open buckets, which costs more than digesting a second of a
#: busy log (docs/design/collect.md, "Commits"). A crash re-reads at most this much.
COMMIT_EVERY = 10.0


@dataclass
class Stream:
    """A source's place in time: pt's context and the bucket it fed last."""

    context: Context = field(default_factory=Context)
    floor: str | None = None  # start of the latest bucket this source fed


@dataclass
class SourceReport:
    key: str
    label: str
    events: int = 0
    bytes: int = 0
    behind: int = 0
    caught_up: bool = True
    floor: str | None = None
    position: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class PollReport:
    """One poll, for the status line and the tests."""

    sources: list[SourceReport]
    seconds: float
    events: int
    closed: list[tuple[str, str]]  # (bucket start, where the sink put it)
    open: list[str]

    @property
    def caught_up(self) -> bool:
        return all(source.caught_up for source in self.sources)

    @property
    def problems(self) -> list[str]:
        return [problem for source in self.sources for problem in source.problems]


@dataclass
class CollectOptions:
    host: str
    bucket_seconds: int = 3600
    #: A bucket whose end is this long past closes once every source is caught up.
    close_after: float = 300.0
    budget: int = POLL_BUDGET
    max_classes: int = MAX_CLASSES
    #: Called with each bucket about to close (EXPLAIN of its worst samples).
    on_close: Callable[[str, Aggregate], dict[str, Any]] | None = None
    #: Seconds between commits of a service's polls (a bucket that can close commits at once).
    commit_every: float = COMMIT_EVERY


class Collector:
    """Sources into buckets into a sink; see the module docstring."""

    def __init__(
        self,
        sources: list[Source],
        sink: Sink,
        checkpoints: Checkpoints,
        options: CollectOptions,
        *,
        clock: Callable[[], dt.datetime] = dt.datetime.now,
    ) -> None:
        if len({source.key for source in sources}) != len(sources):
            raise ConfigError("the same source is given twice")
        self.sources = sources
        self.sink = sink
        self.checkpoints = checkpoints
        self.options = options
        self.buckets = Buckets(options.bucket_seconds)
        self.clock = clock
        self.state: dict[str, Any] = {}
        self.streams: dict[str, Stream] = {}
        self.open_buckets: dict[str, Aggregate] = {}
        self.closed_through: str | None = None
        self._pending: dict[str, Accumulator] = {}  # read since the last commit, by bucket
        self._changed: set[str] = set()  # open buckets changed since the last commit
        self._last_commit = 0.0
        self._opened = False

    # --- lifecycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Take the collector's lock and continue from its last commit."""
        self.checkpoints.lock()
        try:
            self._load()
        except BaseException:
            self.checkpoints.unlock()
            raise
        self._opened = True

    def _load(self) -> None:
        """The state of the last commit: positions, open buckets; nothing pending."""
        saved = self.checkpoints.load()
        if saved is not None and saved.bucket_seconds != self.options.bucket_seconds:
            raise ConfigError(
                f"collector {self.checkpoints.collector!r} has {saved.bucket_seconds}s buckets in"
                f" this state file; keep --bucket {saved.bucket_seconds}s or use another --label"
            )
        self.state = saved.state if saved else {"sources": {}}
        self.open_buckets = saved.open_buckets if saved else {}
        self.closed_through = self.state.get("closed_through")
        self._pending, self._changed = {}, set()
        for source in self.sources:
            kept = self.state["sources"].get(source.key)
            source.restore(kept["position"] if kept else None)
            self.streams[source.key] = Stream(
                Context.from_json(kept["context"]) if kept else Context(),
                kept.get("floor") if kept else None,
            )
        self._last_commit = time.monotonic()

    def reload(self) -> None:
        """Forget what was read since the last commit (after a failed poll)."""
        self._load()

    def close(self, *, commit: bool = True) -> None:
        """Commit what was read (unless a poll failed since), release the sources and lock."""
        try:
            if commit and self._opened and (self._pending or self._changed):
                self.commit()
        finally:
            for source in self.sources:
                source.close()
            self.checkpoints.unlock()
            self._opened = False

    def __enter__(self) -> Collector:
        self.open()
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(commit=kind is None)

    # --- one round --------------------------------------------------------------------------
    def poll(self, *, commit: bool | None = None) -> PollReport:
        """Read, bucket, and commit when due: one round (see the module docstring).

        A commit folds what was read into the open buckets, hands the closable ones to
        the sink and saves the positions with the open buckets. It is due when a bucket
        can close, when ``commit_every`` seconds have passed, or when ``commit`` says so
        (``collect_once`` commits every poll). A poll that raises leaves the collector to
        be :meth:`reload`-ed: what it read is not committed."""
        assert self._opened, "open() the collector first"
        began = time.monotonic()
        reports = []
        budget = self.options.budget
        clocks: dict[str, dt.datetime] = {}
        progresses = {source.key: Progress(budget=1) for source in self.sources}
        if any([source.refresh(progresses[source.key]) for source in self.sources]):
            self.commit()  # rotations seen, new files known: saved before reading
        for source in self.sources:
            report = SourceReport(source.key, source.label)
            progress = progresses[source.key]
            progress.budget = max(budget, 1)
            stream = self.streams[source.key]
            for item in source.read(progress):
                if isinstance(item, Text):
                    report.bytes += item.size
                    report.events += self._take_text(stream, item)
                else:
                    report.events += self._take_classes(stream, item)
            budget = max(0, progress.budget)
            clocks[source.key] = progress.now or self.clock()
            report.behind = progress.behind
            report.caught_up = progress.caught_up
            report.problems = progress.problems
            report.floor = stream.floor
            reports.append(report)
        closing = self._closable(reports, clocks)
        due = time.monotonic() - self._last_commit >= self.options.commit_every
        closed = self.commit(closing) if (commit is None and (closing or due)) or commit else []
        for report in reports:
            report.position = _describe(self._source(report.key).checkpoint())
        return PollReport(
            sources=reports,
            seconds=time.monotonic() - began,
            events=sum(report.events for report in reports),
            closed=closed,
            open=sorted(self.open_buckets.keys() | self._pending.keys()),
        )

    def commit(self, closing: list[str] | None = None) -> list[tuple[str, str]]:
        """Fold what was read into the open buckets, hand ``closing`` to the sink, and save
        the positions with the open buckets in one transaction; the buckets written."""
        for start, accumulator in sorted(self._pending.items()):
            self._bucket(start).add(accumulator.finish())
            self._changed.add(start)
        self._pending = {}
        closing = closing or []
        closed = self._close(closing)
        self._checkpoint(self._changed - set(closing), closing)
        self._changed = set()
        self._last_commit = time.monotonic()
        return closed

    def _source(self, key: str) -> Source:
        return next(source for source in self.sources if source.key == key)

    def _floor(self, stream: Stream) -> str | None:
        """The bucket a source feeds next at the earliest: never one already closed."""
        floor = stream.floor
        if self.closed_through is not None:
            after = self.buckets.after(self.closed_through)
            if floor is None or floor < after:
                floor = after
        return floor

    def _take_text(self, stream: Stream, item: Text) -> int:
        events = 0
        line_base = item.line_base
        floor = self._floor(stream)
        if floor is None and stream.context.ts:
            floor = self.buckets.start_of(stream.context.ts)
        for low, high, bucket in route(item.data, floor, self.buckets, item.size):
            if bucket is None:
                # Text with no time and nothing before it to take one from (a log read
                # from the middle): the bucket of the reading; later times are not held
                # back by it.
                start = self.buckets.start_of(self.clock().strftime("%Y-%m-%d %H:%M:%S"))
            else:
                start = bucket if floor is None or bucket > floor else floor
                stream.floor = floor = start
            accumulator = self._pending.get(start)
            if accumulator is None:
                accumulator = self._pending[start] = Accumulator(
                    self.options.host, self.options.max_classes
                )
            piece = accumulator.add(
                item.data,
                low,
                high,
                context=stream.context,
                name=item.name,
                line_base=line_base,
            )
            line_base += piece.newlines
            stream.context = piece.context
            events += piece.events
        if item.lines_read is not None:
            item.lines_read(line_base - item.line_base)
        return events

    def _take_classes(self, stream: Stream, item: Classes) -> int:
        start = self.buckets.start_of(item.ts)
        floor = self._floor(stream)
        if floor is not None and start < floor:
            start = floor
        stream.floor = start
        if not item.aggregate:
            return 0
        self._bucket(start).add(item.aggregate)
        self._changed.add(start)
        return item.aggregate.events

    def _bucket(self, start: str) -> Aggregate:
        found = self.open_buckets.get(start)
        if found is None:
            found = self.open_buckets[start] = Aggregate(self.options.max_classes)
        return found

    # --- closing and committing ----------------------------------------------------------------
    def _closable(self, reports: list[SourceReport], clocks: dict[str, dt.datetime]) -> list[str]:
        """Open buckets every source has moved past, or that ended ``close_after`` ago
        while every source is caught up (by each source's clock)."""
        closing = []
        for start in sorted(self.open_buckets.keys() | self._pending.keys()):
            for report in reports:
                floor = self.streams[report.key].floor
                if floor is not None and floor > start:
                    continue
                past = self.buckets.seconds_past_end(start, clocks[report.key])
                if report.caught_up and past >= self.options.close_after:
                    continue
                break
            else:
                closing.append(start)
                continue
            break  # buckets close in order
        return closing

    def _close(self, closing: list[str]) -> list[tuple[str, str]]:
        written = []
        for start in closing:
            aggregate = self._bucket(start)
            extra = self.options.on_close(start, aggregate) if self.options.on_close else {}
            document = aggregate.document(self._meta(start, closed=True) | extra)
            written.append((start, self.sink.write(self.options.host, start, document)))
        if closing:
            self.closed_through = max(closing)
        return written

    def _meta(self, start: str, *, closed: bool) -> dict[str, Any]:
        return {
            "host": self.options.host,
            "bucket": {
                "start": start,
                "end": self.buckets.after(start),
                "seconds": self.options.bucket_seconds,
            },
            "closed": closed,
            "collector": f"govern {__version__}",
        }

    def _checkpoint(self, changed: set[str], closed: list[str]) -> None:
        sources = dict(self.state.get("sources", {}))
        for source in self.sources:
            stream = self.streams[source.key]
            sources[source.key] = {
                "label": source.label,
                "position": source.checkpoint(),
                "context": stream.context.to_json(),
                "floor": stream.floor,
            }
        self.state = {"sources": sources, "closed_through": self.closed_through}
        documents = {start: self.open_buckets[start].saved() for start in sorted(changed)}
        self.checkpoints.commit(self.options.bucket_seconds, self.state, documents, closed)
        for start in closed:
            del self.open_buckets[start]


def _describe(position: dict[str, Any]) -> str:
    """A short text of a position for the status line."""
    files = position.get("files")
    if files:
        return ", ".join(f"{item['name']}@{item['offset']:,}" for item in files)
    if "watermark" in position:
        return f"up to {position['watermark']}"
    if "snapshot_at" in position:
        return f"snapshot {position['snapshot_at']}"
    return "-"
