"""How the rest of govern reads a digest's classes: the protocols of the digest package.

:class:`ClassSource` is what every engine's result offers the reports and the rules (the
merged classes); :class:`ClassDocuments` is a ``govern.digest`` document's ``classes`` as
the digest rules read them (govern/digest/lazy.py implements it twice).

Two sources implement :class:`ClassSource`: :class:`govern.digest.aggregate.Partial` (the
Python engine's classes, and saved digests read back for a merge) and
:class:`govern.digest.native_total.NativePartial` (the classes the native core holds). A
source may build each :class:`ClassAgg` only when asked, so reports read one class at a
time and never need them all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from govern.digest.aggregate import ClassAgg, Malformed
from govern.digest.columns import ClassColumns
from govern.digest.ordering import ClassKey


@dataclass(frozen=True, slots=True)
class DocumentFrame:
    """What every class document of one digest shares: its Query_time (micro-units),
    its window in seconds and its inputs' names by file index."""

    total_time: int
    window_seconds: float | None
    sources: tuple[str | None, ...]


class ClassSource(Protocol):
    """The merged classes of a digest, as reports and rules read them.

    ``class_at`` may return a fresh object at every call: callers neither keep nor
    change it.
    """

    other: ClassAgg | None
    events: int
    filtered: int
    no_statement: int
    malformed: int
    malformed_kept: list[Malformed]
    banners: int
    minutes: dict[str, list[int]]

    def class_count(self) -> int:
        """Classes, not counting ``other``."""
        ...

    def class_keys(self, attribute: str) -> Sequence[ClassKey]:
        """One key per class (``other`` not included), ``metric`` for ``attribute``."""
        ...

    def ranked_keys(
        self, attribute: str, function: str
    ) -> tuple[Sequence[ClassKey], Sequence[ClassKey]]:
        """The keys of the classes with Query_time in report order
        (:func:`govern.digest.ordering.rank`), and those without."""
        ...

    def class_at(self, index: int) -> ClassAgg:
        """The class of a key from the latest ``class_keys()`` or ``ranked_keys()``."""
        ...

    def totals(self) -> ClassAgg:
        """Every class and ``other`` merged into one new ClassAgg: its count, ts_min,
        ts_max, metrics and booleans (what reports read; the core fills only these)."""
        ...

    def fingerprint_of(self, class_id: str) -> bytes | None:
        """The fingerprint of the class whose query ID is ``class_id``, if kept."""
        ...

    def query_ids(self, keys: Sequence[ClassKey]) -> bytes:
        """The query IDs of ``keys``' classes, 16 bytes each (the MD5 of the fingerprint)."""
        ...

    def class_json(self, keys: Sequence[ClassKey], frame: DocumentFrame) -> Iterator[str | None]:
        """Each class's JSON document as govern/digest/document.py writes it, when the
        source writes it itself (the native core), else None (then it is built)."""
        ...

    def class_json_runs(
        self, keys: Sequence[ClassKey], frame: DocumentFrame
    ) -> Iterator[bytes | int]:
        """:meth:`class_json` in runs: documents the source writes in a row, as UTF-8
        joined by ``", "`` in one bytes object; for a class it does not write, its
        position in ``keys`` (then it is built)."""
        ...

    def rule_columns(
        self,
        keys: Sequence[ClassKey],
        words: Sequence[str],
        max_depth: int,
        metrics: Sequence[str],
        verbs: Sequence[str],
    ) -> ClassColumns:
        """The classes of ``keys`` as the digest rules' screens read them; ``words`` and
        ``max_depth`` are META001's (statement words, deepest brackets) for the PLAIN flag,
        ``verbs`` govern/digest/tables.py's write verbs for the MAY_WRITE flag."""
        ...


#: Finds the findings (as JSON) of a class by its query ID.
FindingsLookup = Callable[[str], list[dict[str, Any]]]


class ClassDocuments(Protocol):
    """A digest document's ``classes``, as the digest rules read them."""

    def views(self) -> Iterator[Mapping[str, Any]]:
        """Each class document, to read (a lazy class builds each part when it is read)."""
        ...

    def fingerprint_of(self, class_id: str) -> str | None:
        """The fingerprint (as documents show it) of a class of the digest, by query ID."""
        ...

    def attach_findings(self, lookup: FindingsLookup) -> None:
        """Give each class document its ``findings`` (now, or as it is built)."""
        ...

    def view_at(self, position: int) -> Mapping[str, Any]:
        """The class at ``position`` (in ``views()`` order), as ``views()`` gives it."""
        ...

    def columns(
        self, words: Sequence[str], max_depth: int, metrics: Sequence[str], verbs: Sequence[str]
    ) -> ClassColumns:
        """Every class, in ``views()`` order, as the digest rules' screens read them."""
        ...
