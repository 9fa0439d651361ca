"""``govern digest`` and ``govern digest merge``: thin shells over govern.digest."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from govern.digest.filters import parse_filters, parse_time
from govern.digest.result import Digest, from_document, merge_digests, parse_order_by, to_document
from govern.digest.runner import DigestOptions, digest_paths
from govern.errors import UsageError
from govern.output import print_json, warn

_FORMATS = ("text", "json", "md")


def _report_options(command: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--format",
                "output_format",
                type=click.Choice(_FORMATS),
                default="text",
                show_default=True,
                help="text: tables for a terminal; json: the govern.digest document "
                "(mergeable; docs/json.md); md: Markdown for CI comments.",
            ),
            click.option(
                "--top",
                type=click.IntRange(min=1),
                help="Classes to show [default: 20 for text and md; all for json, so it can be merged].",
            ),
            click.option(
                "--order-by",
                default="Query_time:sum",
                show_default=True,
                metavar="ATTR:FUNC",
                help="Rank classes by an attribute's sum, max, min, avg or cnt.",
            ),
            click.option(
                "--max-classes",
                type=click.IntRange(min=1),
                default=10_000,
                show_default=True,
                help="Distinct classes kept; further ones are counted in an 'other' class.",
            ),
        ]
    ):
        command = option(command)
    return command


class _DigestCommand(click.Command):
    """``govern digest merge …`` is the merge command; anything else digests logs."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        if args and args[0] == "merge":
            return merge.make_context(f"{info_name} merge", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command(cls=_DigestCommand)
@click.argument("inputs", nargs=-1, metavar="FILE…")
@_report_options
@click.option(
    "--since", metavar="TIME", help="Only events at or after TIME (log time, or 2h, 7d…)."
)
@click.option("--until", metavar="TIME", help="Only events before TIME.")
@click.option(
    "--filter",
    "filter_texts",
    multiple=True,
    metavar="KEY=GLOB",
    help="Keep events whose db, user, host, fingerprint or id matches (=, != or ~REGEX). Repeatable.",
)
@click.option("--host", metavar="NAME", help="Label these logs with the server they come from.")
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    help="Worker processes [default: one per CPU; 1: no workers].",
)
def digest(
    inputs: tuple[str, ...],
    output_format: str,
    top: int | None,
    order_by: str,
    max_classes: int,
    since: str | None,
    until: str | None,
    filter_texts: tuple[str, ...],
    host: str | None,
    jobs: int,
) -> None:
    """Group slow-log events into query classes and report what costs the most.

    FILE may be a slow log from MySQL 5.0-8.x, Percona Server or MariaDB, a
    glob, - for stdin, or a gzip, bzip2 or xz file. Classes use
    pt-query-digest's fingerprints and query IDs.

    \b
    Merge saved JSON digests (several hosts or days, valid percentiles):
      govern digest merge db1.json db2.json [--format …] [--top N]

    Exit codes: 0 ok, 2 bad option or unreadable input.
    """
    parse_order_by(order_by)
    options = DigestOptions(
        order_by=order_by,
        max_classes=max_classes,
        since=parse_time("--since", since) if since else None,
        until=parse_time("--until", until) if until else None,
        filters=parse_filters(filter_texts),
        filter_texts=list(filter_texts),
        host=host,
        jobs=jobs,
    )
    result = digest_paths(list(inputs), options)
    _warn_about_inputs(result)
    _emit(result, output_format, top)


@click.command()
@click.argument("documents", nargs=-1, metavar="DIGEST.json…")
@_report_options
def merge(
    documents: tuple[str, ...], output_format: str, top: int | None, order_by: str, max_classes: int
) -> None:
    """Merge saved digests (govern digest --format json) into one report.

    Classes join on their query ID; counts, sums and sketches add up, so the
    merged percentiles are as good as a digest of all the logs at once. Use
    --host when saving each digest to see the top servers per class.
    """
    parse_order_by(order_by)
    if not documents:
        raise UsageError("no input: give digests saved with --format json (or - for stdin)")
    digests = [_load(name) for name in documents]
    for loaded in digests:
        if loaded.omitted_classes:
            warn(
                f"a digest left out {loaded.omitted_classes} classes (saved with --top): "
                "the merge misses them"
            )
    merged = merge_digests(digests, max_classes=max_classes, order_by=order_by)
    _emit(merged, output_format, top)


def _load(name: str) -> Digest:
    try:
        text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()  # noqa: SIM115
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read: {exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    return from_document(document, name)


def _warn_about_inputs(result: Digest) -> None:
    for source in result.sources:
        for problem in source.problems:
            warn(f"{source.name}: {problem}")
        if source.bytes == 0 and source.name != "-" and source.compression is None:
            warn(f"{source.name}: empty file")
    partial = result.partial
    if partial.malformed:
        for bad in partial.malformed_kept:
            warn(f"{result.sources[bad.file].name}:{bad.line}: {bad.reason}")
        warn(f"{partial.malformed:,} malformed events skipped")
    if not result.ranked() and result.unreported():
        warn("no event has a Query_time header: is this a slow log?")


def _emit(result: Digest, output_format: str, top: int | None) -> None:
    if output_format == "json":
        print_json(to_document(result, top=top))
        return
    document = to_document(result)
    shown = top if top is not None else 20
    if output_format == "md":
        from govern.reports import markdown

        markdown.render(document, sys.stdout, top=shown)
    else:
        from govern.reports import text

        text.render(document, top=shown)
