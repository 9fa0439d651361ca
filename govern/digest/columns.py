"""Every class of a digest at once, in columns: what the digest rules' screens read
(govern/rules/screen.py) to decide which classes a rule can fire on at all, so that the
rules read only those classes. The core fills them in one call
(``_native.Total.rule_columns``); other sources build them row by row (:func:`columns_of`),
the core finding their plain samples all at once when it is there.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from govern import native

#: ClassColumns.flags bits: the class has a sample; it was cut at 64 KB; it is lexically plain
#: (native/src/screen.rs: META001's lexical checks cannot fire); it was logged 1 in N
#: (a Log_slow_rate_limit other than 0 or 1); some statement examined, sent or changed rows.
HAS_SAMPLE, TRUNCATED, PLAIN, SAMPLED, ROWS_TOUCHED = 1, 2, 4, 8, 16
#: … and the fingerprint may start with a write verb of govern/digest/tables.py (its verb
#: is the first word, stripped, lower case; a fingerprint not ASCII may).
MAY_WRITE = 32
#: The metrics whose Rows values mean the server parsed a class's SQL (ROWS_TOUCHED).
ROWS_METRICS = ("Rows_examined", "Rows_sent", "Rows_affected")


@dataclass(frozen=True, slots=True)
class ClassColumns:
    """What the digest rules' screens read of every class at once (govern/rules/screen.py),
    in the classes' order: the samples' and fingerprints' bytes joined (class ``i`` ends at
    ``sample_ends[i]``, ``fingerprint_ends[i]``), calls, a flag byte per class and, per
    metric asked for, each class's largest value in micro-units (-1: no value)."""

    samples: bytes
    sample_ends: array[int]
    fingerprints: bytes
    fingerprint_ends: array[int]
    counts: array[int]
    flags: bytes
    maxes: dict[str, array[int] | array[float]]


@dataclass(frozen=True, slots=True)
class ColumnRow:
    """One class as :func:`columns_of` takes it (sources that are not the core's)."""

    sample: bytes | None
    truncated: bool
    fingerprint: bytes
    count: int
    sampled: bool
    rows_touched: bool
    maxes: tuple[float, ...]


def may_write(fingerprint: bytes, verbs: Sequence[str]) -> bool:
    """The MAY_WRITE flag of a fingerprint (native/src/screen.rs ``may_write``)."""
    if not fingerprint.isascii() or any(b < 0x20 for b in fingerprint):
        return True
    return fingerprint.lstrip().split(b" ", 1)[0].lower().decode() in verbs


def columns_of(
    rows: Iterable[ColumnRow],
    metrics: Sequence[str],
    verbs: Sequence[str],
    words: Sequence[str] = (),
    max_depth: int = 0,
) -> ClassColumns:
    """Columns from rows built in Python. With ``words`` and ``max_depth`` (META001's), the
    core marks the lexically plain samples as it does for its own classes (a store's
    merge, saved digests merged); without them, or without the core, none is (Python lexes
    them all)."""
    samples, prints = bytearray(), bytearray()
    sample_ends, print_ends, counts = array("Q"), array("Q"), array("Q")
    flags = bytearray()
    maxes: dict[str, array[float]] = {name: array("d") for name in metrics}
    for row in rows:
        flag = (SAMPLED if row.sampled else 0) | (ROWS_TOUCHED if row.rows_touched else 0)
        flag |= MAY_WRITE if may_write(row.fingerprint, verbs) else 0
        if row.sample is not None:
            flag |= HAS_SAMPLE | (TRUNCATED if row.truncated else 0)
            samples += row.sample
        prints += row.fingerprint
        sample_ends.append(len(samples))
        print_ends.append(len(prints))
        counts.append(row.count)
        flags.append(flag)
        for name, value in zip(metrics, row.maxes, strict=True):
            maxes[name].append(value)
    plain = native.plain_samples(bytes(samples), sample_ends, words, max_depth) if words else None
    if plain is not None:
        flags = bytearray(
            flag | PLAIN if flag & HAS_SAMPLE and is_plain else flag
            for flag, is_plain in zip(flags, plain, strict=True)
        )
    return ClassColumns(
        bytes(samples), sample_ends, bytes(prints), print_ends, counts, bytes(flags), dict(maxes)
    )
