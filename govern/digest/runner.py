"""Running a digest: inputs resolved, an engine chosen, its classes made a :class:`Digest`.

Two engines digest the same way (govern/digest/segments.py cuts the inputs; segments
are digested independently and merged strictly in input order) and give the same
document: the native core (govern/digest/native_engine.py) whenever it is built and
not disabled, else the Python reference engine (govern/digest/python_engine.py). Each
returns the merged classes as a :class:`~govern.digest.classes.ClassSource`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

from govern import native
from govern.digest import segments
from govern.digest.classes import ClassSource
from govern.digest.inputs import Input, check_text, resolve
from govern.digest.native_engine import NativeEngine
from govern.digest.options import DigestOptions
from govern.digest.ordering import parse_order_by
from govern.digest.result import Digest, Source


class Engine(Protocol):
    """What the runner asks of an engine."""

    def digest(self, inputs: Sequence[Input], options: DigestOptions, workers: int) -> ClassSource:
        """The inputs' classes, merged in input order; ``workers`` processes or threads
        (1: none), a progress bar on a terminal."""
        ...

    def digest_bytes(self, data: bytes, options: DigestOptions) -> ClassSource:
        """A slow log held in memory, digested serially."""
        ...


def engine() -> Engine:
    """The native core when it is built (and ``GOVERN_NATIVE`` is not 0), else Python's
    (imported only then: a native run need not load the Python engine)."""
    if native.available():
        return NativeEngine()
    from govern.digest.python_engine import PythonEngine

    return PythonEngine()


def digest_paths(arguments: list[str], options: DigestOptions | None = None) -> Digest:
    """Digest slow logs (paths, globs, ``-``): the library form of ``govern digest``."""
    options = options or DigestOptions()
    parse_order_by(options.order_by)
    inputs = resolve(arguments, options.host)
    jobs = options.jobs or os.cpu_count() or 1
    plain = sum(item.size or 0 for item in inputs if item.seekable)
    parallel = jobs > 1 and (
        plain >= segments.PARALLEL_MINIMUM or any(not item.seekable for item in inputs)
    )
    sources = [
        Source(
            item.name,
            item.host,
            item.size or 0,
            item.compression,
            item.problems,
            stream=not item.regular,
        )
        for item in inputs
    ]
    return _digest(engine().digest(inputs, options, jobs if parallel else 1), sources, options)


def digest_bytes(
    data: bytes, options: DigestOptions | None = None, name: str = "<bytes>"
) -> Digest:
    """Digest a slow log held in memory (serially)."""
    options = options or DigestOptions()
    parse_order_by(options.order_by)
    check_text(name, data[:65536])
    sources = [Source(name, options.host, len(data))]
    return _digest(engine().digest_bytes(data, options), sources, options)


def _digest(partial: ClassSource, sources: list[Source], options: DigestOptions) -> Digest:
    return Digest(
        partial=partial,
        sources=sources,
        order_by=options.order_by,
        max_classes=options.max_classes,
        since=options.since,
        until=options.until,
        filters=list(options.filter_texts),
    )
