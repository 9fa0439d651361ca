"""What a user should hear about a digest before its report: problems with the inputs,
malformed events, an ``--order-by`` attribute no event has. Each is one line for stderr."""

from __future__ import annotations

from govern import units
from govern.digest.ordering import parse_order_by
from govern.digest.result import Digest


def input_warnings(digest: Digest) -> list[str]:
    """Problems with the inputs and their events (none of them stops a digest)."""
    lines = []
    for source in digest.sources:
        lines += [f"{source.name}: {problem}" for problem in source.problems]
        if source.bytes == 0 and not source.stream:
            lines.append(f"{source.name}: empty file")
    partial = digest.partial
    if partial.malformed:
        lines += [
            f"{digest.sources[bad.file].name}:{bad.line}: {bad.reason}"
            for bad in partial.malformed_kept
        ]
        lines.append(f"{partial.malformed:,} malformed events skipped")
    reported, unreported = digest.counts()
    if not reported and unreported:
        lines.append("no event has a Query_time header: is this a slow log?")
    order = order_warning(digest)
    return [*lines, order] if order else lines


def summary_line(digest: Digest, seconds: float) -> str:
    """What a digest did, in one line (said on stderr when no bar showed it: piped, cron):
    ``digested slow.log, 1.00 GiB: 4,213,000 events, 405 classes in 1.4 s``."""
    sources = digest.sources
    what = sources[0].name if len(sources) == 1 else units.plural(len(sources), "input")
    if sources and not any(source.stream for source in sources):
        what += f", {units.size(sum(source.bytes for source in sources))}"
    partial = digest.partial
    return (
        f"digested {what}: {units.plural(partial.events, 'event')}, "
        f"{units.plural(partial.class_count(), 'class', 'classes')} in {seconds:.1f} s"
    )


def order_warning(digest: Digest) -> str | None:
    """An attribute no event has orders nothing: say so rather than print log order.

    Keys are read one at a time until one class has the attribute, so a digest of
    200,000 classes does not build 200,000 keys to learn what the first one says."""
    attribute, function = parse_order_by(digest.order_by)
    if function == "cnt":
        return None
    partial = digest.partial
    keys = partial.class_keys(attribute)
    if not any(key.reportable for key in keys):
        return None
    if any(key.metric is not None for key in keys) or (
        partial.other is not None and attribute in partial.other.metrics
    ):
        return None
    known = ", ".join(sorted(digest.global_metrics()))
    return f"--order-by {digest.order_by}: no event has {attribute} (these have: {known})"
