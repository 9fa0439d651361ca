"""The native merge of stored class states (native/src/stored.rs) against the Python one
(ClassAgg.merge): the same digest, rule for rule, on real buckets and on rows that push
its edges (capped value and lead counts, samples tied, integers beyond the core's)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from govern import native
from govern.digest.document import full_document
from govern.history import rows
from govern.history.merging import Merger, no_collection
from tests.history.support import at, log_path, minute_buckets


@pytest.fixture(scope="module")
def units(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], list[bytes]]]:
    """Stored units of three hosts' buckets of a real log: (meta, class state blobs)."""
    buckets = minute_buckets(log_path(), tmp_path_factory.mktemp("buckets"))
    made = []
    for index, host in enumerate(("db1", "db2", "db3")):
        for hour, document in enumerate(buckets):
            moved = at(document, host, f"2026-11-2{index}T{hour:02}:00:00")
            stored = rows.bucket_rows(moved)
            made.append((rows.unpack(stored.meta), [row.state for row in stored.classes]))
    return made


def edged(units: list[tuple[dict[str, Any], list[bytes]]]) -> Iterator[tuple[Any, list[bytes]]]:
    """The units with their classes' rows changed to reach the merge's edges: more than
    1000 distinct users and 100 leads over the rows, samples of equal Query_time from other
    inputs, and in one row a figure beyond the core's integers (2**100)."""
    for number, (meta, blobs) in enumerate(units):
        names = {item["name"]: n for n, item in enumerate(meta["inputs"])}
        changed = []
        for index, blob in enumerate(blobs):
            agg = rows.decode_class(blob, names)
            agg.strings["user"] = {f"u{number * 300 + n}": n + 1 for n in range(400)}
            agg.runs.leads = {f"L{number * 20 + n}": [n + 1, n + 2] for n in range(40)}
            if agg.sample is not None:
                agg.sample.query_time = 1_000_000 + index % 3
            if number == 2 and index % 4 == 0:
                agg.fit.sxx = 2**100
            changed.append(rows.encode_agg(agg, meta["inputs"][0]["name"]))
        yield meta, changed


def merged(units: Any, *, disabled: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(native, "_DISABLED", disabled)
    merger = Merger()
    assert (merger._native is None) == disabled
    with no_collection():
        for meta, blobs in units:
            merger.add(meta, blobs)
    return full_document(merger.digest())


@pytest.fixture
def core() -> None:
    if native.stored_merge() is None:
        pytest.skip("the native core is not built")


@pytest.mark.usefixtures("core")
def test_the_core_merges_real_buckets_as_python_does(
    units: list[tuple[dict[str, Any], list[bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    python = merged(units, disabled=True, monkeypatch=monkeypatch)
    assert python["totals"]["events"] > 0 and len(python["classes"]) > 10
    assert merged(units, disabled=False, monkeypatch=monkeypatch) == python


@pytest.mark.usefixtures("core")
def test_the_core_merges_edges_as_python_does(
    units: list[tuple[dict[str, Any], list[bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows_at_edges = list(edged(units))
    python = merged(rows_at_edges, disabled=True, monkeypatch=monkeypatch)
    assert '"(other)"' in json.dumps(python["classes"][0]["values"])  # users past the cap
    assert merged(rows_at_edges, disabled=False, monkeypatch=monkeypatch) == python


def test_version_2_reads_back_as_version_1(units: list[tuple[dict[str, Any], list[bytes]]]) -> None:
    """A state is written as version 2; its aggregate is the one version 1 gave, and a
    state whose hashes are not 64-bit words is still written as version 1."""
    meta, blobs = units[0]
    names = {item["name"]: n for n, item in enumerate(meta["inputs"])}
    for blob in blobs:
        assert blob[:1] == rows.STATE_V2
        agg = rows.decode_class(blob, names)
        assert rows.decode_class(rows.encode_agg(agg, meta["inputs"][0]["name"]), names) == agg
    agg.connections = {-1, 5}
    assert rows.encode_agg(agg, None)[:1] == rows.STATE_V1
    assert rows.decode_class(rows.encode_agg(agg, None), names).connections == {-1, 5}


def test_version_3_is_version_2_without_zlib(
    units: list[tuple[dict[str, Any], list[bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Roll-ups write version 3 (no zlib): each reads back as the same aggregate, hands
    the core its stored bytes as they are (version 2's payload behind another version
    byte), and a merge of version 3 rows (either merge) is the merge of the same rows in
    version 2."""
    again = []
    for meta, blobs in units:
        names = {item["name"]: n for n, item in enumerate(meta["inputs"])}
        plain = []
        for blob in blobs:
            agg = rows.decode_class(blob, names)
            state = rows.encode_agg(agg, meta["inputs"][0]["name"], compress=False)
            assert state[:1] == rows.STATE_V3 and len(state) > len(blob)
            assert rows.decode_class(state, names) == agg
            assert rows.payload(state) is state
            assert rows.load_payload(rows.payload(state)) == rows.load_payload(rows.payload(blob))
            assert rows.unpack(state) == rows.unpack(blob)
            plain.append(state)
        again.append((meta, plain))
    for disabled in (True, False):
        if not disabled and native.stored_merge() is None:
            continue
        expected = merged(units, disabled=disabled, monkeypatch=monkeypatch)
        assert merged(again, disabled=disabled, monkeypatch=monkeypatch) == expected
