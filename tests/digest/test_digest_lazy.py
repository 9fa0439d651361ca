"""The lazy digest document (build_document): class documents built one at a time, from a
ClassSource, and written, checked by the rules and annotated without a list of them.

The lazy document must read exactly as the full one (full_document, a list of class
documents) does: same JSON, same findings, same ranking.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from govern import native
from govern.digest.aggregate import ClassAgg, Partial
from govern.digest.document import build_document, full_document, limit_classes
from govern.digest.lazy import LazyClasses
from govern.digest.options import DigestOptions
from govern.digest.ordering import order_value, parse_order_by
from govern.digest.result import Digest
from govern.digest.runner import digest_paths
from govern.fingerprint import query_id
from govern.output import print_json
from govern.rules.digest import DigestRuleOptions, check_document
from tests.paths import REPO

EXAMPLE = REPO / "examples" / "digest" / "rules-slow.log.gz"
RULES = DigestRuleOptions(target="mariadb-10.11")


class CountingPartial:
    """A ClassSource (either engine's) that counts class_at() calls and the documents it
    writes itself: each is a class built."""

    calls = 0

    def __init__(self, source: Any) -> None:
        self._source = source

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)

    def class_at(self, index: int) -> ClassAgg:
        CountingPartial.calls += 1
        return self._source.class_at(index)  # type: ignore[no-any-return]

    def class_json(self, keys: Any, frame: Any) -> Iterator[str | None]:
        """A class the source writes as JSON itself (the core) is a class built too."""
        for text in self._source.class_json(keys, frame):
            CountingPartial.calls += text is not None
            yield text

    def class_json_runs(self, keys: Any, frame: Any) -> Iterator[bytes | int]:
        """Classes in a run the core wrote, and those built, count alike."""
        for piece in self._source.class_json_runs(keys, frame):
            if isinstance(piece, bytes):
                CountingPartial.calls += piece.count(b'"id16": ')
            yield piece


def _digest(python: bool = False, **options: Any) -> Digest:
    """The example log's digest, by the native core when built, or the Python engine."""
    saved = native._DISABLED
    native._DISABLED = python or saved
    try:
        return digest_paths([str(EXAMPLE)], DigestOptions(jobs=1, **options))
    finally:
        native._DISABLED = saved


def _counting(digest: Digest) -> Digest:
    digest.partial = CountingPartial(digest.partial)
    CountingPartial.calls = 0
    return digest


def _written(document: dict[str, Any], terminal: bool = False) -> str:
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return terminal

    out = Stream()
    print_json(document, out)
    return out.getvalue()


@pytest.mark.parametrize("top", [None, 1, 3, 10_000])
@pytest.mark.parametrize("rules", [False, True])
def test_lazy_document_writes_the_full_documents_json(top: int | None, rules: bool) -> None:
    digest = _digest()
    full = full_document(digest)
    lazy = build_document(digest)
    assert isinstance(lazy["classes"], LazyClasses)
    assert list(lazy) == list(full)  # same keys, same order
    if rules:
        check_document(full, RULES).annotate(full)
        check_document(lazy, RULES).annotate(lazy)
        assert full["rules"]["summary"]["findings"] > 0
    expected = json.dumps(limit_classes(full, top), ensure_ascii=False)
    assert _written(limit_classes(lazy, top)) == expected + "\n"
    # on a terminal: indented, the lazy sequences written as lists
    indented = json.dumps(limit_classes(full, top), ensure_ascii=False, indent=2)
    assert _written(limit_classes(lazy, top), terminal=True) == indented + "\n"


def test_findings_go_where_annotate_puts_them() -> None:
    digest = _digest()
    full, lazy = full_document(digest), build_document(digest)
    full_report = check_document(full, RULES)
    lazy_report = check_document(lazy, RULES)
    assert [f.to_json() for f in lazy_report.findings] == [
        f.to_json() for f in full_report.findings
    ]
    assert lazy_report.to_json() == full_report.to_json()
    lazy_report.annotate(lazy)
    full_report.annotate(full)
    for built, listed in zip(lazy["classes"], full["classes"], strict=True):
        assert list(built) == list(listed)  # "findings" keeps its place
        assert built == listed
    # a slice taken after annotate, and one taken before, both carry the findings
    assert list(lazy["classes"][:5]) == full["classes"][:5]
    views = lazy["classes"].views()
    assert [view["findings"] for view in views] == [item["findings"] for item in full["classes"]]


def test_class_documents_are_built_when_read() -> None:
    digest = _counting(_digest())
    document = build_document(digest)
    classes = document["classes"]
    assert CountingPartial.calls == 0
    assert len(classes) > 3 and CountingPartial.calls == 0
    first = next(iter(classes))
    assert CountingPartial.calls == 1
    assert classes[0] == first and CountingPartial.calls == 2  # nothing cached
    top = classes[:2]
    assert isinstance(top, LazyClasses) and CountingPartial.calls == 2
    assert len(list(top)) == 2 and CountingPartial.calls == 4
    CountingPartial.calls = 0
    _written(document)
    assert CountingPartial.calls == len(classes)  # one pass: each class once


def test_rules_read_each_class_once_per_pass() -> None:
    """One pass builds the screens' columns (each class once: the Python engine's source
    builds them from its classes), then only the classes a rule can fire on and the
    evidence's write classes are read, each at most once a pass (rules/screen.py)."""
    digest = _counting(_digest())
    document = build_document(digest)
    count = len(document["classes"])
    report = check_document(document, RULES)
    read = CountingPartial.calls - count
    assert 0 < read < 2 * count  # some classes are screened out, none read twice a pass
    report.annotate(document)
    assert CountingPartial.calls == count + read


def test_plain_documents_are_still_annotated_in_place() -> None:
    document = full_document(_digest())
    report = check_document(document, RULES)
    report.annotate(document)
    assert isinstance(document["classes"], list)
    assert sum(len(item["findings"]) for item in document["classes"]) == len(report.findings)
    assert document["rules"] == report.to_json()


def _reference_order(partial: Partial, order_by: str) -> list[str]:
    """The ranking as Digest.ranked() made it from ClassAggs before ClassKeys."""
    attribute, function = parse_order_by(order_by)

    def value(agg: ClassAgg) -> float:
        if function == "cnt":
            metric = agg.metrics.get(attribute)
            return float(metric.count if metric else agg.count if attribute == "Query_time" else 0)
        metric = agg.metrics.get(attribute)
        if metric is None or metric.count == 0:
            return -float("inf")
        return {
            "sum": float(metric.total),
            "max": float(metric.high),
            "min": float(metric.low),
            "avg": metric.total / metric.count if metric.count else 0.0,
        }[function]

    reported = [a for a in partial.classes.values() if "Query_time" in a.metrics]
    reported.sort(key=lambda a: (-value(a), query_id(a.fingerprint)))
    return [query_id(a.fingerprint) for a in reported]


@pytest.mark.parametrize(
    "order_by",
    [
        "Query_time:sum",
        "Query_time:max",
        "Query_time:cnt",
        "Rows_examined:avg",
        "Rows_affected:min",
        "Rows_sent:cnt",
        "Nonexistent:sum",
        "Nonexistent:cnt",
    ],
)
def test_ranking_from_class_keys(order_by: str) -> None:
    digest = _digest(python=True)
    digest.order_by = order_by
    assert isinstance(digest.partial, Partial)
    ranked = digest.ranked()
    assert [query_id(key.fingerprint) for key in ranked] == _reference_order(
        digest.partial, order_by
    )
    attribute, function = parse_order_by(order_by)
    values = [order_value(key, attribute, function) for key in ranked]
    assert values == sorted(values, reverse=True)
    assert [item["id"] for item in build_document(digest)["classes"]] == [
        query_id(key.fingerprint) for key in ranked
    ]


def test_totals_merge_every_class_without_changing_them() -> None:
    digest = _digest(python=True, max_classes=5)  # some classes in other
    partial = digest.partial
    assert isinstance(partial, Partial) and partial.other is not None
    before = copy.deepcopy(partial.all_classes())
    totals = partial.totals()
    assert partial.all_classes() == before
    aggs = partial.all_classes()
    assert totals.count == sum(a.count for a in aggs)
    assert digest.total_query_time() == sum(
        a.metrics["Query_time"].total for a in aggs if "Query_time" in a.metrics
    )
    firsts = [a.ts_min for a in aggs if a.ts_min]
    lasts = [a.ts_max for a in aggs if a.ts_max]
    assert digest.window()[:2] == (min(firsts), max(lasts))
    assert partial.class_count() == len(partial.classes) == 5


def test_unreported_classes_are_keys_too() -> None:
    log = (
        b"# Time: 2024-01-02T03:04:05.000000Z\n"
        b"# User@Host: app[app] @ localhost []\n"
        b"select 1;\n"
        b"# User@Host: app[app] @ localhost []\n"
        b"select 2 from t;\n"
    )
    from govern.digest.runner import digest_bytes

    digest = digest_bytes(log)
    assert list(digest.ranked()) == [] and len(digest.unreported()) == 2
    assert digest.counts() == (0, 2)
    lazy, full = build_document(digest), full_document(digest)
    assert list(lazy["unreported"]) == full["unreported"]
    assert full["totals"]["unreported_events"] == 2
    assert _written(lazy) == json.dumps(full, ensure_ascii=False) + "\n"


def test_class_views_read_as_the_class_documents() -> None:
    digest = _digest()
    lazy, full = build_document(digest), full_document(digest)
    classes = lazy["classes"]
    assert isinstance(classes, LazyClasses)
    views = list(classes.views())
    assert len(views) == len(full["classes"])
    for view, item in zip(views, full["classes"], strict=True):
        assert list(view) == list(item) and len(view) == len(item)
        assert view == item
        assert list(view["metrics"]) == list(item["metrics"])
        assert view.get("nothing") is None and "nothing" not in view
        assert "Query_time" in view["metrics"] and "Nothing" not in view["metrics"]
    # a view reads only what is asked: no metric figures until one is read
    view = next(classes.views())
    assert view["id"] == full["classes"][0]["id"]
    assert view._parts.keys() == {"id"}  # type: ignore[attr-defined]


@pytest.mark.skipif(not native.available(), reason="native core not built")
def test_native_source_answers_as_the_python_one() -> None:
    """The core's ClassSource (classes kept in Rust) gives the Python Partial's keys,
    classes and totals."""
    python, core = _digest(python=True, max_classes=5), _digest(max_classes=5)
    assert not isinstance(core.partial, Partial)
    for attribute in ("Query_time", "Rows_examined", "Nope"):
        want = sorted(python.partial.class_keys(attribute), key=lambda k: k.fingerprint)
        got = sorted(core.partial.class_keys(attribute), key=lambda k: k.fingerprint)
        assert [k[1:] for k in map(_key_fields, got)] == [k[1:] for k in map(_key_fields, want)]
    assert core.partial.class_count() == python.partial.class_count() == 5
    assert core.partial.totals().metrics == python.partial.totals().metrics
    assert core.window() == python.window()
    assert core.total_query_time() == python.total_query_time()
    assert full_document(core) == full_document(python)
    for order_by in (
        "Query_time:sum",
        "Query_time:cnt",
        "Rows_examined:max",
        "Lock_time:avg",
        "Rows_sent:min",
        "Nope:sum",
        "Nope:cnt",
    ):
        core.order_by = python.order_by = order_by
        for ours, theirs in zip(core.keys(), python.keys(), strict=True):
            assert list(map(_key_fields, ours)) == list(map(_key_fields, theirs)), order_by


def _key_fields(key: Any) -> tuple[Any, ...]:
    return (key.index, key.fingerprint, key.count, key.reportable, key.metric)


@pytest.mark.skipif(not native.available(), reason="native core not built")
def test_order_by_check_builds_keys_only_until_it_knows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """govern digest asks whether any class has the --order-by attribute: the core's
    source builds keys one at a time until one has it (a list of 200,000 keys was 80 MB
    at the top of the digest's memory), and all of them only when none has it."""
    from govern.digest.checks import order_warning

    core = _digest()
    built: list[int] = []
    key_at = core.partial.key_at

    def counting(index: int, attribute: str) -> Any:
        built.append(index)
        return key_at(index, attribute)

    monkeypatch.setattr(core.partial, "key_at", counting)
    classes = core.partial.class_count()
    assert classes > 10
    assert order_warning(core) is None
    assert len(built) <= 2
    built.clear()
    core.order_by = "Nope:sum"
    warning = order_warning(core)
    assert set(built) == set(range(classes))
    assert warning is not None and warning.startswith("--order-by Nope:sum: no event has Nope")
