"""What ``govern collect`` tells: a line per source and poll, the buckets it closed, and
(``--once --json``) the govern.collect document (docs/json.md)."""

from __future__ import annotations

import contextlib
from typing import Any

from govern import __version__, units
from govern.collect.collector import Collector, PollReport
from govern.output import info, is_terminal, warn

SCHEMA = "govern.collect"
SCHEMA_VERSION = 1


def poll_lines(report: PollReport) -> list[str]:
    """One line per source that read something or is behind, one per closed bucket."""
    lines = []
    for source in report.sources:
        if not source.events and not source.behind and not source.bytes:
            continue
        rate = source.events / report.seconds if report.seconds > 0 else 0.0
        read = f"{units.count(source.events, 'grouped')} events"
        if source.bytes:
            read += f", {units.size(source.bytes)}"
        lines.append(
            f"{source.label}: {read} in {units.duration(report.seconds, 'clock')}"
            f" ({units.count(rate, 'grouped')} events/s); at {source.position};"
            f" behind {units.size(source.behind)}"
            + (f"; bucket {source.floor}" if source.floor else "")
        )
    lines += [f"closed bucket {start}: {where}" for start, where in report.closed]
    return lines


class Reporter:
    """Prints each poll (plain lines: never cut, for cron and logs) and keeps the totals."""

    def __init__(self, host: str, *, show_progress: bool) -> None:
        self.host = host
        self.show_progress = show_progress and is_terminal()
        self.polls: list[PollReport] = []
        self._bar: Any = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Reporter:
        if self.show_progress:
            from govern.progress import progress

            self._bar = self._stack.enter_context(progress("collecting", None, force=True))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def started(self, collector: Collector, interval: float) -> None:
        labels = ", ".join(source.label for source in collector.sources)
        info(f"collect: serving {self.host}: {labels}; a poll every {interval:g}s")

    def on_poll(self, report: PollReport) -> None:
        self.polls.append(report)
        for problem in report.problems:
            warn(problem)
        if self._bar is not None:
            read = sum(source.bytes for source in report.sources)
            behind = sum(source.behind for source in report.sources)
            done = sum(s.bytes for poll in self.polls for s in poll.sources)
            self._bar.update_total(done + behind)
            self._bar.advance(read)
        for line in poll_lines(report):
            info(line)

    def document(self) -> dict[str, Any]:
        """The govern.collect document of the polls so far."""
        last = self.polls[-1] if self.polls else None
        sources: dict[str, dict[str, Any]] = {}
        for poll in self.polls:
            for source in poll.sources:
                kept = sources.setdefault(
                    source.key, {"key": source.key, "label": source.label, "events": 0, "bytes": 0}
                )
                kept["events"] += source.events
                kept["bytes"] += source.bytes
                kept.update(
                    position=source.position,
                    behind=source.behind,
                    caught_up=source.caught_up,
                    bucket=source.floor,
                )
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "govern_version": __version__,
            "host": self.host,
            "polls": len(self.polls),
            "seconds": round(sum(poll.seconds for poll in self.polls), 3),
            "events": sum(poll.events for poll in self.polls),
            "sources": list(sources.values()),
            "closed": [
                {"start": start, "file": where}
                for poll in self.polls
                for start, where in poll.closed
            ],
            "open": last.open if last else [],
            "problems": [problem for poll in self.polls for problem in poll.problems],
            "caught_up": bool(last and last.caught_up),
        }
