"""What ``govern digest`` does, as a library: digest slow logs (or merge saved digests, or
compare two), run the rule catalog over the classes, write the report.

The commands (govern/commands/digest.py, digest_compare.py) only turn options into the
arguments of these functions and their results into exit codes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from govern import units
from govern.digest.checks import input_warnings, order_warning, summary_line
from govern.digest.document import build_document, limit_classes
from govern.digest.options import DigestOptions, PtTablesOptions
from govern.digest.ordering import parse_order_by
from govern.digest.result import Digest
from govern.digest.runner import digest_paths
from govern.errors import UsageError
from govern.output import info, is_terminal, print_json, warn
from govern.progress import progress

if TYPE_CHECKING:
    from govern.digest.pt_tables import PtTables
    from govern.digest.report import Report
    from govern.html.markup import Markup
    from govern.reports.compare import Comparison
    from govern.rules.digest import DigestRuleOptions

FORMATS = ("text", "json", "md", "html")
#: Classes a report shows without --top (JSON lists them all, so it can be merged).
DEFAULT_TOP = 20
#: Classes above which the rules' pass shows a bar on a terminal.
RULES_BAR_ABOVE = 4096
#: Piped (no bar), a phase after the digest that took this many seconds says so on stderr.
LONG_PHASE = 1.0


@dataclass(frozen=True)
class ReportOptions:
    """How to write the report: ``--format``, ``--top``, ``-o``, ``--windows``, ``--state``."""

    output_format: str = "text"  # text, json, md or html
    top: int | None = None  # classes shown; None: DEFAULT_TOP, all in JSON
    output: str = "-"  # where the html page goes ("-": stdout)
    window_files: Sequence[str] = ()  # govern history --json files, shaded on the html page
    state_path: str | None = None  # the state file whose blind windows the html page shades

    def check(self) -> None:
        """-o and --windows are for the html page (checked before any log is read)."""
        if self.output_format not in FORMATS:
            raise UsageError(f"--format {self.output_format}: expected one of {', '.join(FORMATS)}")
        if self.output_format == "html":
            return
        if self.output != "-":
            raise UsageError("-o: only with --format html (redirect the other formats: > FILE)")
        if self.window_files:
            raise UsageError("--windows: only the html format draws blind windows")


def digest_logs(
    inputs: Sequence[str],
    options: DigestOptions,
    report: ReportOptions,
    rules: DigestRuleOptions | None,
    stream: IO[str] | None = None,
    tables: PtTablesOptions | None = None,
) -> int:
    """``govern digest``: digest slow logs (paths, globs, ``-``), run the rules, write the
    report (and pt's review/history tables, ``tables``); warnings about the inputs go to
    stderr, and, piped (no bar showed it), a line saying what was digested. Returns the
    exit code: 1 when a finding reaches ``rules.fail_on``, else 0."""
    parse_order_by(options.order_by)
    report.check()
    with _opened(tables) as writer:  # a wrong DSN or table fails before any log is read
        with _rules_loading(rules):
            started = time.monotonic()
            digest = digest_paths(list(inputs), options)
            for line in input_warnings(digest):
                warn(line)
            if not is_terminal():
                info(summary_line(digest, time.monotonic() - started))
        return render_digest(digest, report, rules, stream, writer)


@contextlib.contextmanager
def _rules_loading(rules: DigestRuleOptions | None) -> Iterator[None]:
    """The rules' modules (not sqlglot: see `_load_rules`) loaded in a thread while the
    digest is made (the core digests a log, or merges a store's rows, on threads of its
    own), instead of after it; joined once the digest is made."""
    if rules is None:
        yield
        return
    loader = threading.Thread(target=_load_rules, name="govern-load-rules", daemon=True)
    loader.start()
    yield  # (an error leaves the loader: it is a daemon)
    loader.join()  # the rules run once their modules are whole


def merge_saved(
    paths: Sequence[str],
    report: ReportOptions,
    rules: DigestRuleOptions | None,
    *,
    order_by: str = "Query_time:sum",
    max_classes: int = 10_000,
    stream: IO[str] | None = None,
    tables: PtTablesOptions | None = None,
) -> int:
    """``govern digest merge``: saved digests merged into one, then as :func:`digest_logs`."""
    parse_order_by(order_by)
    report.check()
    if not paths:
        raise UsageError("no input: give digests saved with --format json (or - for stdin)")
    with _opened(tables) as writer:
        return _merge(paths, report, rules, order_by, max_classes, stream, writer)


def _merge(
    paths: Sequence[str],
    report: ReportOptions,
    rules: DigestRuleOptions | None,
    order_by: str,
    max_classes: int,
    stream: IO[str] | None,
    writer: PtTables | None,
) -> int:
    from govern.digest.load import load_report
    from govern.digest.merge import merge_reports

    saved = [load_report(path) for path in paths]
    for one in saved:
        if one.omitted_classes:
            warn(
                f"{one.path}: {one.omitted_classes} classes were left out (saved with --top): "
                "the merge misses them"
            )
    merged = merge_reports(saved, max_classes=max_classes, order_by=order_by)
    warning = order_warning(merged)
    if warning:
        warn(warning)
    return render_digest(merged, report, rules, stream, writer)


@contextlib.contextmanager
def _opened(tables: PtTablesOptions | None) -> Iterator[PtTables | None]:
    """pt's review and history tables, connected and checked (None: not asked for)."""
    if tables is None or not tables.wanted:
        yield None
        return
    from govern.digest.pt_tables import PtTables  # pymysql: only for --review/--history

    writer = PtTables.open(tables)
    try:
        yield writer
    finally:
        writer.close()


def digest_store(
    url: str,
    report: ReportOptions,
    rules: DigestRuleOptions | None,
    *,
    since: str,
    until: str,
    hosts: str | None = None,
    order_by: str = "Query_time:sum",
    max_classes: int = 10_000,
    stream: IO[str] | None = None,
) -> int:
    """``govern digest --store URL``: the buckets of [since, until) (log time, as
    ``YYYY-MM-DD HH:MM:SS``) merged, of the hosts matching the glob ``hosts``, then as
    :func:`digest_logs`."""
    import datetime as dt

    from govern.history.store import open_store

    parse_order_by(order_by)
    report.check()
    low = dt.datetime.strptime(since, "%Y-%m-%d %H:%M:%S")
    high = dt.datetime.strptime(until, "%Y-%m-%d %H:%M:%S")
    if low >= high:
        raise UsageError(f"--since {since} is not before --until {until}")
    store = open_store(url)
    try:
        with _rules_loading(rules):
            digest = store.digest(
                low, high, hosts=hosts, max_classes=max_classes, order_by=order_by
            )
    finally:
        store.close()
    if not digest.store or not digest.store.get("hosts"):
        where = f" of hosts matching {hosts!r}" if hosts else ""
        warn(f"{store.url}: no buckets{where} between {since} and {until}")

    def trends(model: Report) -> Markup:
        """The page's Trends: the whole server and its top classes, hour by hour."""
        from govern.history.trends import trends as read_trends
        from govern.reports.trends_html import TREND_CLASSES, marks, trends_section

        top = sorted(model.classes, key=lambda c: (-c.total_time, c.id))[:TREND_CLASSES]
        titles = [
            (c.id, f"{rank}. {c.id[-16:]} {c.fingerprint[:100]}") for rank, c in enumerate(top, 1)
        ]
        again = open_store(url)
        try:
            found = read_trends(again, low, high, titles, hosts=hosts)
        finally:
            again.close()
        return trends_section(found, marks(*_runs_and_nights(report.state_path)))

    return render_digest(digest, report, rules, stream, trends=trends)


#: Schedule nights read for the trend charts (newest first).
NIGHTS = 1000


def _runs_and_nights(state_path: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every ``govern run`` job and schedule night of the state file, as their features'
    documents (none without a state file: reading never creates one)."""
    from govern.schedulers.history import History
    from govern.state import StateStore, default_state_path
    from govern.wrappers import journal
    from govern.wrappers.status import runs_json

    target = Path(state_path) if state_path else default_state_path()
    if not target.is_file():
        return [], []
    with StateStore.open(target) as store:
        return runs_json(store, journal.history(store)), list(History(store).nights(limit=NIGHTS))


def render_digest(
    digest: Digest,
    report: ReportOptions,
    rules: DigestRuleOptions | None,
    stream: IO[str] | None = None,
    tables: PtTables | None = None,
    *,
    trends: Callable[[Report], Markup] | None = None,
) -> int:
    """Run the rules over a digest, fill pt's tables (``tables``) and write its report;
    the exit code as :func:`digest_logs`'s. ``trends`` makes the html page's Trends section
    (over a store).

    The document's classes are built one at a time, as the rules and the report read
    them (each pass builds them again): no moment holds every class document."""
    out = stream or sys.stdout
    document = build_document(digest)
    exit_code = 0
    if rules is not None:
        from govern.rules.digest import check_document

        started = time.monotonic()
        with progress("checking rules", None, force=_rules_bar(document)):
            found = check_document(document, rules)
        found.annotate(document)
        exit_code = found.exit_code
        _said_if_long(
            started,
            f"checked {units.plural(len(found.rules_run), 'rule')} over "
            f"{units.plural(len(document['classes']), 'class', 'classes')}: "
            f"{units.plural(len(found.findings), 'finding')}",
        )
    if tables is not None:
        said, skipped = tables.write(document)
        for line in said:
            info(line)
        for line in skipped:
            warn(line)
    if report.output_format == "json":
        started = time.monotonic()
        shown = limit_classes(document, report.top)
        print_json(shown, out)
        _said_if_long(started, f"wrote {units.plural(len(shown['classes']), 'class', 'classes')}")
        return exit_code
    from govern.digest.report import Report  # the report model: text, md and html only

    names = ", ".join(source.name for source in digest.sources)
    model = Report.of_document(document, names)
    top = report.top if report.top is not None else DEFAULT_TOP
    if report.output_format == "html":
        from govern.html.page import write_page
        from govern.reports.digest_html import digest_report
        from govern.reports.windows import load_windows, windows_from_history
        from govern.wrappers.status import recorded_history

        recorded = windows_from_history(recorded_history(report.state_path), "state file")
        windows = recorded + load_windows(report.window_files)
        section = trends(model) if trends is not None else None
        write_page(digest_report(model, windows=windows, top=top, trends=section), report.output)
    elif report.output_format == "md":
        from govern.reports import markdown

        markdown.render(model, out, top=top)
    else:
        from govern.reports import text

        text.render(model, out, top=top)
    return exit_code


def _said_if_long(started: float, what: str) -> None:
    """Piped, a phase that took long says what it did and how long it took (a terminal
    showed a bar instead)."""
    seconds = time.monotonic() - started
    if seconds >= LONG_PHASE and not is_terminal():
        info(f"{what} in {seconds:.1f} s")


def _rules_bar(document: dict[str, Any]) -> bool:
    """A bar while the rules run (no count to show: the time so far), on a terminal, for
    a digest of many classes (a few hundred take well under a second)."""
    return is_terminal() and len(document["classes"]) > RULES_BAR_ABOVE


def compare_saved(
    before: str,
    after: str,
    *,
    threshold: float = 0.2,
    min_time: float = 0.001,
    output_format: str = "text",
    output: str = "-",
) -> Comparison:
    """``govern digest compare``: two saved digests (govern's or pt-query-digest's) compared
    class by class, the comparison written in ``output_format`` to ``output``."""
    from govern.digest.load import load_report
    from govern.html.page import write_page
    from govern.reports.compare import compare_digests

    comparison = compare_digests(
        load_report(before), load_report(after), threshold=threshold, min_time=min_time
    )
    if output_format == "json":
        import json

        text = json.dumps(comparison.to_json(), indent=2, ensure_ascii=False) + "\n"
    elif output_format == "md":
        from govern.reports.compare_output import to_markdown

        text = to_markdown(comparison)
    elif output_format == "html":
        from govern.reports.compare_html import compare_report

        text = compare_report(comparison)
    else:
        from govern.reports.compare_output import to_text

        text = to_text(comparison)
    write_page(text, output)
    return comparison


def _load_rules() -> None:
    """The rules' modules, not sqlglot: importing it costs about 0.1 CPU-second that the
    core's threads would lose on 2 cores, and a digest whose classes need no grammar check,
    or whose shapes sqlglot accepted before (rules/catalog/grammar_cache.py), never needs
    it. sqlglot is imported on the main thread by the first grammar check: its dialect is
    registered before it is set up, so a check looking it up while another thread loaded
    it would read with the default grammar (a spurious META001)."""
    import govern.rules.digest
    import govern.rules.sql.statement  # noqa: F401
