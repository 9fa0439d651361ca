"""A digest document's classes: built one at a time when read, or held as a list.

``govern digest`` never holds every class document at once: the rules, the report and
the JSON writer each read the classes in turn, and each class document is built when
read (:class:`LazyClasses`). A saved document's classes are a :class:`ClassList`. Both
are :class:`govern.digest.classes.ClassDocuments`, which is how the digest rules read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, SupportsIndex, overload

from govern.digest.classes import FindingsLookup
from govern.digest.columns import ROWS_METRICS, ClassColumns, ColumnRow, columns_of
from govern.digest.ordering import ClassKey
from govern.output import Encoded


class ClassList(list[dict[str, Any]]):
    """Class documents held in full (a saved digest, :func:`full_document`)."""

    _by_id: dict[str, str] | None = None

    def views(self) -> Iterator[Mapping[str, Any]]:
        return iter(self)

    def fingerprint_of(self, class_id: str) -> str | None:
        by_id = self._by_id
        if by_id is None or len(by_id) != len(self):
            by_id = self._by_id = {item["id"]: item["fingerprint"] for item in self}
        return by_id.get(class_id)

    def attach_findings(self, lookup: FindingsLookup) -> None:
        for item in self:
            item["findings"] = lookup(item["id"])

    def view_at(self, position: int) -> Mapping[str, Any]:
        return self[position]

    def columns(
        self, words: Sequence[str], max_depth: int, metrics: Sequence[str], verbs: Sequence[str]
    ) -> ClassColumns:
        rows = (_document_row(item, metrics) for item in self)
        return columns_of(rows, metrics, verbs, words, max_depth)

    @overload
    def __getitem__(self, index: SupportsIndex) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> ClassList: ...

    def __getitem__(self, index: SupportsIndex | slice) -> dict[str, Any] | ClassList:
        if isinstance(index, slice):
            return ClassList(super().__getitem__(index))
        return super().__getitem__(index)


def _document_row(item: Mapping[str, Any], metrics: Sequence[str]) -> ColumnRow:
    """A class document as the digest rules' screens read it (figures back in micro-units)."""
    figures = item.get("metrics") or {}

    def high(name: str) -> float:
        found = figures.get(name)
        return float(found["max"]) * 1e6 if found and found.get("count") else -1.0

    sample = item.get("sample")
    rates = (item.get("values") or {}).get("Log_slow_rate_limit", {})
    return ColumnRow(
        sample=sample["query"].encode("utf-8", "surrogatepass") if sample else None,
        truncated=bool(sample and sample.get("truncated")),
        fingerprint=str(item.get("fingerprint") or "").encode("utf-8", "surrogatepass"),
        count=int(item["count"]),
        sampled=any(rate not in ("0", "1") for rate in rates),
        rows_touched=any((figures.get(name) or {}).get("max") for name in ROWS_METRICS),
        maxes=tuple(high(name) for name in metrics),
    )


class ClassBuilder(Protocol):
    """What :class:`LazyClasses` builds its documents with (govern/digest/document.py)."""

    findings: FindingsLookup | None

    def __call__(self, key: ClassKey) -> dict[str, Any]:
        """The whole document of the class of ``key``."""
        ...

    def view(self, key: ClassKey) -> Mapping[str, Any]:
        """The document of the class of ``key``, each part built when read."""
        ...

    def fingerprint_of(self, class_id: str) -> str | None:
        """The fingerprint of a class of the whole digest, by query ID."""
        ...

    def encoded(self, keys: Sequence[ClassKey]) -> Iterator[str]:
        """The documents of ``keys`` as JSON text, in order."""
        ...

    def joined(self, keys: Sequence[ClassKey]) -> Iterator[bytes]:
        """The documents of ``keys`` as UTF-8 JSON separated by ``", "``, in pieces."""
        ...

    def columns(
        self,
        keys: Sequence[ClassKey],
        words: Sequence[str],
        max_depth: int,
        metrics: Sequence[str],
        verbs: Sequence[str],
    ) -> ClassColumns:
        """The classes of ``keys`` as the digest rules' screens read them."""
        ...


class LazyDocuments(Sequence[dict[str, Any]]):
    """A read-only list of documents built from keys when read, each time it is read.

    Nothing is cached: iterating builds one document at a time, which the reader
    keeps or drops. A slice is another lazy sequence over the same builder.
    """

    __slots__ = ("_build", "_keys")

    def __init__(
        self, keys: Sequence[ClassKey], build: Callable[[ClassKey], dict[str, Any]]
    ) -> None:
        self._keys = keys
        self._build = build

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> LazyDocuments: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | LazyDocuments:
        if isinstance(index, slice):
            return self._view(self._keys[index])
        return self._build(self._keys[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        build = self._build
        for key in self._keys:
            yield build(key)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self._keys)} documents>"

    def _view(self, keys: Sequence[ClassKey]) -> LazyDocuments:
        return LazyDocuments(keys, self._build)


class LazyClasses(LazyDocuments, Encoded):
    """A digest's class documents in rank order, built one at a time when read.

    The findings attached (the digest rules' annotate) go into each class document as
    it is built; slices share them. Written as JSON, the documents come as text
    (:meth:`encoded`: the native core writes them, never built as dicts).
    """

    __slots__ = ("_builder",)

    def __init__(self, keys: Sequence[ClassKey], builder: ClassBuilder) -> None:
        super().__init__(keys, builder)
        self._builder = builder

    def _view(self, keys: Sequence[ClassKey]) -> LazyClasses:
        return LazyClasses(keys, self._builder)

    def encoded(self) -> Iterator[str]:
        return self._builder.encoded(self._keys)

    def joined(self) -> Iterator[bytes]:
        return self._builder.joined(self._keys)

    def views(self) -> Iterator[Mapping[str, Any]]:
        """The classes as read-only views, each part built when read: for readers of a
        few figures per class (the digest rules), much cheaper than the documents."""
        view = self._builder.view
        for key in self._keys:
            yield view(key)

    def fingerprint_of(self, class_id: str) -> str | None:
        return self._builder.fingerprint_of(class_id)

    def view_at(self, position: int) -> Mapping[str, Any]:
        return self._builder.view(self._keys[position])

    def columns(
        self, words: Sequence[str], max_depth: int, metrics: Sequence[str], verbs: Sequence[str]
    ) -> ClassColumns:
        return self._builder.columns(self._keys, words, max_depth, metrics, verbs)

    def attach_findings(self, lookup: FindingsLookup) -> None:
        self._builder.findings = lookup
