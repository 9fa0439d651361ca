"""A mergeable quantile sketch with a fixed relative error, in exact integer arithmetic.

Digests from many files, hosts or days must combine with valid percentiles, so a
class keeps a histogram of its values in log-linear buckets (as HdrHistogram
does) instead of the values themselves. Merging two sketches adds bucket
counts, so merging is exact, associative and commutative: a parallel digest
equals a serial one bit for bit.

Values are integers: govern measures every numeric attribute in micro-units
(``Query_time: 0.000316`` is 316, ``Rows_sent: 5`` is 5,000,000), so there is no
floating point anywhere in here, and the Rust core (native/src/sketch.rs)
reproduces every bucket and every percentile exactly. The specification, in
docs/design/digest-engines.md ("The sketch"), is this:

* ``SUB_BITS = 7``. For ``v >= 0``: ``shift = max(0, v.bit_length() - 8)``,
  ``key = (shift << 7) + (v >> shift)``. Keys 0..255 hold the values 0..255
  exactly; above, a bucket spans ``2**shift`` values starting at
  ``(v >> shift) << shift``, at least 128 times its width.
* Negative values use ``key = -1 - key(-v)`` (mirror image, keys stay in value order).
* A bucket's value is the midpoint of its range, rounded down:
  ``lo + (2**shift - 1) // 2``; its relative error is below ``1/256`` (0.39%).
* Quantile ``q``: nearest rank ``r = max(1, ceil(q * n))`` in value order; the
  value of the bucket where the cumulative count reaches ``r``, clamped to the
  exact ``[min, max]``. So the median of one value is that value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

SUB_BITS = 7
EXACT_LIMIT = 1 << (SUB_BITS + 1)  # 256: keys below this are the value itself
RELATIVE_ERROR = 1 / (1 << (SUB_BITS + 1))  # 1/256 ≈ 0.39%


def bucket_key(value: int) -> int:
    """The bucket of an integer value (see the module docstring)."""
    if value < 0:
        return -1 - bucket_key(-value)
    if value < EXACT_LIMIT:
        return value
    shift = value.bit_length() - (SUB_BITS + 1)
    return (shift << SUB_BITS) + (value >> shift)


def bucket_range(key: int) -> tuple[int, int]:
    """The lowest and highest value a bucket holds."""
    if key < 0:
        low, high = bucket_range(-1 - key)
        return -high, -low
    if key < EXACT_LIMIT:
        return key, key
    shift = (key >> SUB_BITS) - 1
    mantissa = key - (shift << SUB_BITS)
    low = mantissa << shift
    return low, low + (1 << shift) - 1


def bucket_value(key: int) -> int:
    """The value a bucket stands for: the midpoint of its range, rounded down."""
    low, high = bucket_range(key)
    return low + (high - low) // 2


def quantile(buckets: Mapping[int, int], q: float, low: int, high: int) -> int:
    """Nearest-rank quantile ``q`` (0 < q <= 1) of a sketch, clamped to [low, high]."""
    return quantiles(buckets, (q,), low, high)[0]


def quantiles(buckets: Mapping[int, int], qs: Sequence[float], low: int, high: int) -> list[int]:
    """:func:`quantile` for each of ``qs`` (ascending), in one walk of the buckets: a
    report asks three of every metric of every class."""
    total = sum(buckets.values())
    if total == 0:
        raise ValueError("quantile of an empty sketch")
    if len(buckets) == 1:  # most metrics of most classes
        (key,) = buckets
        return [min(high, max(low, bucket_value(key)))] * len(qs)
    ranks = [max(1, _ceil_rank(q, total)) for q in qs]
    found: list[int] = []
    seen = 0
    for key in sorted(buckets):
        seen += buckets[key]
        while len(found) < len(ranks) and seen >= ranks[len(found)]:
            found.append(min(high, max(low, bucket_value(key))))
        if len(found) == len(ranks):
            return found
    return found + [high] * (len(ranks) - len(found))


def _ceil_rank(q: float, total: int) -> int:
    """``ceil(q * total)`` for the quantiles govern reports, without float surprises.

    ``q`` is given in thousandths (0.5, 0.95, 0.99 …), so the rank is computed as
    ``ceil(permille * total / 1000)`` in integers.
    """
    permille = round(q * 1000)
    return -((-permille * total) // 1000)


def merge_into(target: dict[int, int], source: Mapping[int, int]) -> None:
    """Add ``source``'s bucket counts to ``target``."""
    if not target:  # a copy: the history store's merges start from empty sketches a lot
        target.update(source)
        return
    get = target.get
    for key, count in source.items():
        target[key] = get(key, 0) + count


def add_counted(target: dict[int, int], values: Iterable[tuple[int, int]]) -> None:
    """Add ``(value, count)`` pairs: how the digest engine feeds a class's sketch."""
    for value, count in values:
        key = bucket_key(value)
        target[key] = target.get(key, 0) + count


def to_pairs(buckets: Mapping[int, int]) -> list[list[int]]:
    """JSON form: ``[[key, count], …]`` in key order."""
    return [[key, buckets[key]] for key in sorted(buckets)]


_INT = frozenset((int,))


def from_pairs(pairs: Iterable[Iterable[int]]) -> dict[int, int]:
    if isinstance(pairs, list):  # the JSON form, distinct int keys: built in C (6x faster)
        try:
            made: dict[int, int] = dict(pairs)
        except (TypeError, ValueError):
            pass
        else:
            if (
                len(made) == len(pairs)
                and _INT.issuperset(map(type, made))
                and _INT.issuperset(map(type, made.values()))
            ):
                return made
    result: dict[int, int] = {}
    for key, count in pairs:
        result[int(key)] = result.get(int(key), 0) + int(count)
    return result


# --- distinct counts (connections per class): k minimum values -------------------------
#
# A class remembers the K smallest 64-bit hashes of the connections that ran it. Up to K
# connections the count is exact; beyond, it is estimated as (K - 1) * 2**64 / (largest
# kept hash + 1), about 6% relative error. Union then trim to the K smallest merges two.

DISTINCT_K = 256
MASK64 = (1 << 64) - 1


def mix64(value: int) -> int:
    """splitmix64's finaliser: a fixed, well-spread 64-bit hash of a 64-bit integer."""
    value = (value + 0x9E3779B97F4A7C15) & MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK64
    return value ^ (value >> 31)


def distinct_add(kept: set[int], hashed: int) -> None:
    if hashed in kept:
        return
    if len(kept) < DISTINCT_K:
        kept.add(hashed)
    elif hashed < max(kept):
        kept.remove(max(kept))
        kept.add(hashed)


def distinct_add_many(kept: set[int], hashed: Iterable[int]) -> None:
    """Add many hashes at once (the same as adding them one by one)."""
    new = set(hashed)
    if len(kept) >= DISTINCT_K:
        largest = max(kept)
        new = {value for value in new if value < largest}
    if new:
        distinct_merge(kept, new)


def distinct_merge(kept: set[int], other: set[int]) -> None:
    if len(kept) >= DISTINCT_K:
        # a full sketch keeps none of other's values above its largest: skip the sort
        largest = max(kept)
        other = {value for value in other if value < largest}
        if not other:
            return
    kept |= other
    if len(kept) > DISTINCT_K:
        for extra in sorted(kept)[DISTINCT_K:]:
            kept.discard(extra)


def distinct_count(kept: set[int]) -> tuple[int, bool]:
    """(count, exact?)"""
    if len(kept) < DISTINCT_K:
        return len(kept), True
    return round((DISTINCT_K - 1) * (1 << 64) / (max(kept) + 1)), False
