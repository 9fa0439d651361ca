"""Which classes of a digest a rule can fire on at all, decided for every class at once.

Reading a class in Python (its figures, its sample lexed into a ``Statement``) costs
tens of microseconds; 200,000 classes cost seconds. So before the rules read any
class, each rule names the classes it *can* fire on (:meth:`Rule.digest_screen`) from
:class:`Screen`: byte tests over all samples joined (``SQL_CACHE`` anywhere, in any
case), calls, the largest logged value of a metric, the core's flags (a sample whose
brackets balance and whose strings close, native/src/screen.rs). A screen is a
necessary condition, never a guess: a class outside every rule's screen has no
finding, so only the union is read, and findings are byte-identical. A sample with a
byte above 127 or a ``govern:`` comment is read whatever the screens say (Unicode
case folding, suppression comments).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from govern.digest.classes import ClassDocuments
from govern.digest.columns import PLAIN, ROWS_TOUCHED, ClassColumns
from govern.digest.tables import WRITE_VERBS

#: Metrics whose largest value a screen may ask for (BATCH002, BATCH003).
METRICS = ("Query_length", "Values_rows")
#: Largest values are compared with this slack (figures are rounded micro-units).
_SLACK = 1.0


class Screen:
    """The classes of one digest, in ``views()`` order, as the screens test them."""

    def __init__(self, columns: ClassColumns) -> None:
        self.columns = columns
        self.size = len(columns.counts)
        self._upper = columns.samples.upper()
        self._lengths: list[int] | None = None
        self._called: list[int] | None = None
        self.always = self._non_ascii() | self.containing(b"GOVERN:")

    def flagged(self, mask: int, value: int, *, equal: bool = True) -> set[int]:
        """Classes whose flags (govern/digest/columns.py) have ``flags & mask == value``
        (``equal=False``: ``!=``): the flag bytes are mapped to 0/1 and the ones found in C."""
        table = bytes(1 if (flag & mask == value) is equal else 0 for flag in range(256))
        marked = self.columns.flags.translate(table)
        found, at = set(), marked.find(1)
        while at >= 0:
            found.add(at)
            at = marked.find(1, at + 1)
        return found

    def count_flagged(self, mask: int) -> int:
        """Classes with any flag of ``mask``."""
        table = bytes(1 if flag & mask else 0 for flag in range(256))
        return self.columns.flags.translate(table).count(1)

    @classmethod
    def of(cls, classes: ClassDocuments, words: Iterable[str] = (), max_depth: int = 0) -> Screen:
        """The columns of ``classes``; ``words`` and ``max_depth`` are META001's (statement
        words, deepest brackets): without them no sample is found lexically plain."""
        return cls(classes.columns(sorted(words), max_depth, METRICS, WRITE_VERBS))

    def _non_ascii(self) -> set[int]:
        if self.columns.samples.isascii():
            return set()
        ends = self.columns.sample_ends
        found: set[int] = set()
        start = 0
        for position, end in enumerate(ends):
            if not self.columns.samples[start:end].isascii():
                found.add(position)
            start = end
        return found

    def containing(self, *needles: bytes) -> set[int]:
        """Classes whose sample holds one of ``needles`` (upper-case ASCII), in any case."""
        text, ends = self._upper, self.columns.sample_ends
        found: set[int] = set()
        for needle in needles:
            at = text.find(needle)
            while at >= 0:
                position = bisect_right(ends, at)
                if at + len(needle) <= ends[position]:
                    found.add(position)
                    at = text.find(needle, ends[position])
                else:  # straddles two samples
                    at = text.find(needle, at + 1)
        return found

    def calls_at_least(self, calls: int) -> set[int]:
        if calls <= 1:
            return set(range(self.size))
        called = self._called
        if called is None:  # most classes of a large digest ran once: skip them for good
            called = self._called = [i for i, n in enumerate(self.columns.counts) if n > 1]
        counts = self.columns.counts
        return {i for i in called if counts[i] >= calls}

    def longer_than(self, size: float) -> set[int]:
        """Classes whose sample has more than ``size`` bytes."""
        lengths = self._lengths
        if lengths is None:
            ends = self.columns.sample_ends
            lengths = self._lengths = [
                end - start for start, end in zip((0, *ends), ends, strict=False)
            ]
        if not lengths or max(lengths) <= size:
            return set()
        return {i for i, length in enumerate(lengths) if length > size}

    def logged_above(self, metric: str, bound: float) -> set[int]:
        """Classes whose largest ``metric`` (in its figures' units) may exceed ``bound``."""
        limit = (bound - _SLACK) * 1_000_000
        highs = self.columns.maxes[metric]
        if not highs or max(highs) <= limit:
            return set()
        return {i for i, high in enumerate(highs) if high > limit}

    def not_plain_or_untouched(self) -> set[int]:
        """Classes whose sample Python must lex for META001, or whose SQL the server may not
        have parsed (no row examined, sent or changed)."""
        both = PLAIN | ROWS_TOUCHED
        return self.flagged(both, both, equal=False)
