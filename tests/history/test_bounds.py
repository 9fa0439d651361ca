"""A mix of class rows has its p95/p99 between the rows' own buckets (govern/history/bounds.py):
what lets govern regressions leave a steady class's sketches unread."""

from __future__ import annotations

import random

from govern import sketch
from govern.history.bounds import quantile_keys, value_range


def test_a_mix_s_percentiles_lie_between_its_rows() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        rows = []
        for _ in range(rng.randint(1, 6)):
            count = rng.randint(1, 60)
            scale = rng.choice([300, 5_000, 80_000])
            buckets: dict[int, int] = {}
            sketch.add_counted(
                buckets, [(int(rng.expovariate(1 / scale)), 1) for _ in range(count)]
            )
            rows.append((buckets, count))
        merged: dict[int, int] = {}
        for buckets, _ in rows:
            sketch.merge_into(merged, buckets)
        keys = [quantile_keys(buckets, count) for buckets, count in rows]
        low = min(sketch.bucket_range(key)[0] for key in merged)  # the exact min lies in here
        high = max(sketch.bucket_range(key)[1] for key in merged)
        values = sketch.quantiles(merged, (0.95, 0.99), low, high)
        for place, value in enumerate(values):
            lowest = min(key[place] for key in keys if key)
            highest = max(key[place] for key in keys if key)
            bottom, top = value_range(lowest, highest, high)
            assert bottom <= value <= top, (keys, value)


def test_a_sketch_missing_events_has_no_buckets() -> None:
    buckets: dict[int, int] = {}
    sketch.add_counted(buckets, [(1_000, 3)])
    assert quantile_keys(buckets, 4) is None
    assert quantile_keys({}, 1) is None
    assert quantile_keys(buckets, 3) == (sketch.bucket_key(1_000),) * 2
