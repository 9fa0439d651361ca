"""The quantile sketch: exact bucket arithmetic, the stated relative error, exact merges."""

from __future__ import annotations

import math
import random

from govern import sketch


def test_small_values_are_exact_and_keys_follow_value_order() -> None:
    assert [sketch.bucket_key(v) for v in range(256)] == list(range(256))
    values = sorted(
        {random.Random(1).randrange(-(10**12), 10**12) for _ in range(20_000)}
        | {0, 1, 255, 256, 257}
    )
    keys = [sketch.bucket_key(v) for v in values]
    assert keys == sorted(keys)


def test_every_value_lies_in_its_bucket_within_the_stated_error() -> None:
    rnd = random.Random(2)
    for _ in range(50_000):
        value = rnd.choice(
            [rnd.randrange(0, 10**3), rnd.randrange(0, 10**9), rnd.randrange(0, 10**15)]
        )
        for signed in (value, -value):
            key = sketch.bucket_key(signed)
            low, high = sketch.bucket_range(key)
            assert low <= signed <= high
            represented = sketch.bucket_value(key)
            assert abs(represented - signed) <= abs(signed) * sketch.RELATIVE_ERROR


def test_bucket_specification_examples() -> None:
    """docs/design/digest-engines.md gives these; a compiled core must agree."""
    assert sketch.bucket_key(316) == 286  # Query_time 0.000316 s
    assert sketch.bucket_range(286) == (316, 317)
    assert sketch.bucket_key(1_000_000) == (12 << 7) + (1_000_000 >> 12)
    assert sketch.bucket_range(1780) == (999_424, 1_003_519)
    assert sketch.bucket_value(1780) == 1_001_471
    assert sketch.bucket_key(-5) == -6


def test_quantiles_nearest_rank_clamped() -> None:
    buckets: dict[int, int] = {}
    sketch.add_counted(buckets, [(v, 1) for v in range(1, 101)])
    assert sketch.quantile(buckets, 0.5, 1, 100) == 50
    assert sketch.quantile(buckets, 0.95, 1, 100) == 95
    assert sketch.quantile(buckets, 0.99, 1, 100) == 99
    single: dict[int, int] = {}
    sketch.add_counted(single, [(123_456_789, 1)])
    assert sketch.quantile(single, 0.5, 123_456_789, 123_456_789) == 123_456_789


def test_quantile_error_against_exact_on_skewed_data() -> None:
    rnd = random.Random(5)
    values = sorted(int(rnd.lognormvariate(8, 2)) for _ in range(100_000))
    buckets: dict[int, int] = {}
    sketch.add_counted(buckets, [(v, 1) for v in values])
    for q in (0.5, 0.95, 0.99):
        exact = values[max(1, -(-int(q * 1000) * len(values) // 1000)) - 1]
        estimate = sketch.quantile(buckets, q, values[0], values[-1])
        assert abs(estimate - exact) <= exact * sketch.RELATIVE_ERROR + 1


def test_merge_is_exact_and_order_free() -> None:
    rnd = random.Random(9)
    parts = [[rnd.randrange(0, 10**8) for _ in range(2000)] for _ in range(5)]
    whole: dict[int, int] = {}
    sketch.add_counted(whole, [(v, 1) for part in parts for v in part])
    for order in (parts, parts[::-1]):
        merged: dict[int, int] = {}
        for part in order:
            piece: dict[int, int] = {}
            sketch.add_counted(piece, [(v, 1) for v in part])
            sketch.merge_into(merged, piece)
        assert merged == whole
    assert sketch.from_pairs(sketch.to_pairs(whole)) == whole


def test_distinct_counter_exact_then_estimated() -> None:
    kept: set[int] = set()
    for thread in range(200):
        sketch.distinct_add(kept, sketch.mix64(thread))
        sketch.distinct_add(kept, sketch.mix64(thread))  # repeats do not count
    assert sketch.distinct_count(kept) == (200, True)
    big: set[int] = set()
    halves: list[set[int]] = [set(), set()]
    for thread in range(50_000):
        hashed = sketch.mix64(thread)
        sketch.distinct_add(big, hashed)
        sketch.distinct_add(halves[thread % 2], hashed)
    count, exact = sketch.distinct_count(big)
    assert not exact and abs(count - 50_000) < 50_000 * 0.2
    sketch.distinct_merge(halves[0], halves[1])
    assert halves[0] == big
    assert sketch.mix64(0) == 0xE220A8397B1DCDAF  # splitmix64 reference value


def _nearest_rank(buckets: dict[int, int], q: float, low: int, high: int) -> int:
    """The definition, one quantile at a time: the bucket holding rank ceil(q × n)."""
    rank = max(1, math.ceil(round(q * 1000) * sum(buckets.values()) / 1000))
    seen = 0
    for key in sorted(buckets):
        seen += buckets[key]
        if seen >= rank:
            return min(high, max(low, sketch.bucket_value(key)))
    return high


def test_quantiles_in_one_walk_equal_the_definition() -> None:
    rng = random.Random(11)
    levels = (0.001, 0.5, 0.5, 0.95, 0.99, 1.0)
    for _ in range(2000):
        buckets: dict[int, int] = {}
        sketch.add_counted(buckets, ((rng.randrange(-50, 10**9), rng.randrange(1, 9))
                                     for _ in range(rng.randrange(1, 6))))  # fmt: skip
        low, high = rng.randrange(-60, 5), rng.randrange(5, 2 * 10**9)
        want = [_nearest_rank(buckets, q, low, high) for q in levels]
        assert sketch.quantiles(buckets, levels, low, high) == want, (buckets, low, high)
        assert [sketch.quantile(buckets, q, low, high) for q in levels] == want
