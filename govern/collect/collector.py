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
from govern.collect.digesting import MAX_CLASSES, Aggregate, Context, digest_text
from govern.collect.sink import Sink
from govern.collect.source import Classes, Progress, Source, Text
from govern.errors import ConfigError

#: Bytes (or rows' worth of text) read from all sources in one poll; more waits for the next.
POLL_BUDGET = 512 * 1024 * 1024


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
        self._opened = False

    # --- lifecycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Take the collector's lock and continue from its last commit."""
        self.checkpoints.lock()
        try:
            saved = self.checkpoints.load()
        except BaseException:
            self.checkpoints.unlock()
            raise
        if saved is not None and saved.bucket_seconds != self.options.bucket_seconds:
            self.checkpoints.unlock()
            raise ConfigError(
                f"collector {self.checkpoints.collector!r} has {saved.bucket_seconds}s buckets in"
                f" this state file; keep --bucket {saved.bucket_seconds}s or use another --label"
            )
        self.state = saved.state if saved else {"sources": {}}
        self.open_buckets = saved.open_buckets if saved else {}
        self.closed_through = self.state.get("closed_through")
        for source in self.sources:
            kept = self.state["sources"].get(source.key)
            source.restore(kept["position"] if kept else None)
            self.streams[source.key] = Stream(
                Context.from_json(kept["context"]) if kept else Context(),
                kept.get("floor") if kept else None,
            )
        self._opened = True

    def close(self) -> None:
        for source in self.sources:
            source.close()
        self.checkpoints.unlock()
        self._opened = False

    def __enter__(self) -> Collector:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one round --------------------------------------------------------------------------
    def poll(self) -> PollReport:
        """Read, bucket, close, hand over and commit: one round (see the module docstring)."""
        assert self._opened, "open() the collector first"
        began = time.monotonic()
        changed: set[str] = set()
        reports = []
        budget = self.options.budget
        clocks: dict[str, dt.datetime] = {}
        progresses = {source.key: Progress(budget=1) for source in self.sources}
        if any([source.refresh(progresses[source.key]) for source in self.sources]):
            self._commit(set(), [])  # rotations seen, new files known: before reading
        for source in self.sources:
            report = SourceReport(source.key, source.label)
            progress = progresses[source.key]
            progress.budget = max(budget, 1)
            stream = self.streams[source.key]
            for item in source.read(progress):
                if isinstance(item, Text):
                    report.bytes += len(item.data)
                    report.events += self._take_text(stream, item, changed)
                else:
                    report.events += self._take_classes(stream, item, changed)
            budget = max(0, progress.budget)
            clocks[source.key] = progress.now or self.clock()
            report.behind = progress.behind
            report.caught_up = progress.caught_up
            report.problems = progress.problems
            report.floor = stream.floor
            reports.append(report)
        closing = self._closable(reports, clocks)
        closed = self._close(closing)
        self._commit(changed - set(closing), closing)
        for report in reports:
            report.position = _describe(self._source(report.key).checkpoint())
        return PollReport(
            sources=reports,
            seconds=time.monotonic() - began,
            events=sum(report.events for report in reports),
            closed=closed,
            open=sorted(self.open_buckets),
        )

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

    def _take_text(self, stream: Stream, item: Text, changed: set[str]) -> int:
        events = 0
        line_base = item.line_base
        floor = self._floor(stream)
        if floor is None and stream.context.ts:
            floor = self.buckets.start_of(stream.context.ts)
        for low, high, bucket in route(item.data, floor, self.buckets):
            piece = digest_text(
                item.data[low:high],
                context=stream.context,
                host=self.options.host,
                name=item.name,
                line_base=line_base,
                max_classes=self.options.max_classes,
            )
            line_base += piece.newlines
            stream.context = piece.context
            if bucket is None:
                # Text with no time and nothing before it to take one from (a log read
                # from the middle): the bucket of the reading; later times are not held
                # back by it.
                start = self.buckets.start_of(self.clock().strftime("%Y-%m-%d %H:%M:%S"))
            else:
                start = bucket if floor is None or bucket > floor else floor
                stream.floor = floor = start
            if piece.aggregate:
                self._bucket(start).add(piece.aggregate)
                changed.add(start)
                events += piece.aggregate.events
        return events

    def _take_classes(self, stream: Stream, item: Classes, changed: set[str]) -> int:
        start = self.buckets.start_of(item.ts)
        floor = self._floor(stream)
        if floor is not None and start < floor:
            start = floor
        stream.floor = start
        if not item.aggregate:
            return 0
        self._bucket(start).add(item.aggregate)
        changed.add(start)
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
        for start in sorted(self.open_buckets):
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
            aggregate = self.open_buckets[start]
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

    def _commit(self, changed: set[str], closed: list[str]) -> None:
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
        documents = {
            start: self.open_buckets[start].document(self._meta(start, closed=False))
            for start in sorted(changed)
        }
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
