"""``govern digest compare BEFORE AFTER``: a thin shell over :mod:`govern.reports.compare`."""

from __future__ import annotations

import click

from govern.errors import EXIT_FINDINGS, UsageError
from govern.units import parse_duration


def parse_seconds(value: str, option: str) -> float:
    """``1ms``, ``0.5s``, ``250us``, ``2m`` (govern.units.parse_duration); 0 is allowed."""
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"{option} {value}: {exc}") from None


def parse_share(value: str, option: str) -> float:
    """``20%`` or ``0.2``."""
    text = value.strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(f"{option} {value}: expected a percentage such as 20%") from None
    if share <= 0:
        raise UsageError(f"{option} {value}: must be above 0")
    return share


@click.command()
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option(
    "--threshold",
    default="20%",
    show_default=True,
    help="How much a class's p95 or total time must grow to count as slower.",
)
@click.option(
    "--min-time",
    default="1ms",
    show_default=True,
    help="...and by at least this much (smaller changes are noise).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "md", "html"]),
    default="text",
    show_default=True,
)
@click.option("-o", "--output", default="-", metavar="FILE", help="Write here [default: stdout].")
@click.option(
    "--fail-on",
    type=click.Choice(["slower", "change", "never"]),
    default="slower",
    show_default=True,
    help="Exit 1 when a class is slower; or is slower, new or gone; or never.",
)
def compare(
    before: str,
    after: str,
    threshold: str,
    min_time: str,
    output_format: str,
    output: str,
    fail_on: str,
) -> None:
    """Compare two saved digests: classes new, gone, slower or faster.

    BEFORE and AFTER are `govern digest --format json` outputs (pt-query-digest
    `--output json` works too: the query IDs are the same). Exit 0 no finding,
    1 findings (see --fail-on), 2 unreadable input or a saved digest that does
    not fit its published schema (the message names the bad field).
    """
    from govern.reports.digest_run import compare_saved

    comparison = compare_saved(
        before,
        after,
        threshold=parse_share(threshold, "--threshold"),
        min_time=parse_seconds(min_time, "--min-time"),
        output_format=output_format,
        output=output,
    )
    counts = comparison.counts
    failing = counts["slower"]
    if fail_on == "change":
        failing += counts["new"] + counts["gone"]
    if fail_on != "never" and failing:
        raise SystemExit(EXIT_FINDINGS)
