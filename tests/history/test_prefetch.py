"""A report's units read ahead in a second thread (govern/history/prefetch.py): the same
items in the same order, the reader's error raised at its place, and a consumer that stops
early stops the reader before the store is used again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from govern.history.prefetch import prefetched


def test_items_come_in_order_from_another_thread() -> None:
    threads = set()

    def items() -> Iterator[int]:
        for number in range(50):
            threads.add(threading.get_ident())
            yield number

    assert list(prefetched(items(), ahead=3)) == list(range(50))
    assert threads and threading.get_ident() not in threads


def test_the_readers_error_is_raised_after_the_items_before_it() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("row 3 unreadable")

    got = []
    with pytest.raises(ValueError, match="row 3 unreadable"):
        for item in prefetched(items()):
            got.append(item)
    assert got == [1, 2]


def test_a_consumer_that_stops_early_stops_the_reader() -> None:
    made = []
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            for number in range(1_000):
                made.append(number)
                yield number
        finally:
            closed.set()

    reading = prefetched(items(), ahead=2)
    with pytest.raises(RuntimeError, match="merge failed"):
        for item in reading:
            if item == 3:
                raise RuntimeError("merge failed")
    reading.close()
    assert closed.is_set()  # the reader ended (its generator closed) before close returned
    assert len(made) < 10
