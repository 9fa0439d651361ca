# Type stub for the extension built from native/src/python/ (mod.rs, figures.rs).
from collections.abc import Callable

from typing_extensions import Buffer

def fingerprint(query: bytes) -> bytes: ...
def query_id(fingerprint: bytes) -> str: ...
def fingerprints_naming(fingerprints: bytes, ends: bytes, keys: list[bytes]) -> bytes: ...
def plain_samples(samples: bytes, ends: bytes, words: list[bytes], max_depth: int) -> bytes: ...
def range_handle(
    data: FileMap | Buffer,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    since: bytes | None = None,
    until: bytes | None = None,
    keep_event: Callable[[bytes | None, bytes | None, bytes | None], bool] | None = None,
    keep_class: Callable[[bytes], bool] | None = None,
    needs_db: bool = False,
    max_events: int | None = None,
) -> Range: ...

class FileMap:
    def __init__(self, path: str) -> None: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...

class MetricFigures:
    count: int
    total: int
    low: int
    high: int
    buckets: dict[int, int]
    decimal: bool

class SampleFigures:
    query_time: int
    query: bytes
    ts: str | None
    db: str | None
    user: str | None
    host: str | None
    file: int
    line: int
    truncated: bool
    unknown_ts: bool
    unknown_db: bool

class RunsFigures:
    runs: int
    calls: int
    repeated_calls: int
    longest: int
    lengths: dict[int, int]
    leads: dict[str, list[int]]

class FitFigures:
    n: int
    sx: int
    sy: int
    sxx: int
    sxy: int

class ClassFigures:
    fingerprint: bytes
    count: int
    ts_min: str | None
    ts_max: str | None
    metrics: dict[str, MetricFigures]
    booleans: dict[str, list[int]]
    strings: dict[str, dict[str, int]]
    servers: dict[str, int]
    histogram: list[int]
    sample: SampleFigures | None
    runs: RunsFigures
    single_runs: RunsFigures
    connections: set[int]
    texts: set[int]
    fit: FitFigures
    unknown_db: int
    unknown_ts: bool

class Range:
    end: int
    newlines: int
    deferred_events: int

class Total:
    events: int
    no_statement: int
    banners: int
    filtered: int
    malformed: int
    def context(self) -> tuple[bytes | None, bytes | None]: ...
    def __init__(self, max_classes: int) -> None: ...
    def __len__(self) -> int: ...
    def add(self, range: Range, file: int, line_base: int, server: str | None = None) -> None: ...
    def finish(self) -> None: ...
    def malformed_kept(self) -> list[tuple[int, int, bytes | None]]: ...
    def minutes(self) -> list[tuple[str, int, int]]: ...
    def key_at(
        self, index: int, attribute: bytes
    ) -> tuple[bytes, int, bool, tuple[int, int, int, int] | None]: ...
    def ranked(self, attribute: bytes, function: str) -> tuple[bytes, bytes]: ...
    def fingerprint_of(self, id: str) -> bytes | None: ...
    def query_ids(self, indexes: bytes) -> bytes: ...
    def class_json(
        self,
        indexes: bytes,
        total_time: int,
        window_seconds: float | None,
        sources: list[str | None],
    ) -> list[str | None]: ...
    def class_json_runs(
        self,
        indexes: bytes,
        total_time: int,
        window_seconds: float | None,
        sources: list[str | None],
    ) -> list[bytes | int]: ...
    def rule_columns(
        self,
        indexes: bytes,
        words: list[bytes],
        max_depth: int,
        metrics: list[bytes],
        verbs: list[bytes],
    ) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, list[bytes]]: ...
    def class_at(self, index: int) -> ClassFigures: ...
    def other(self) -> ClassFigures | None: ...
    def totals(self) -> ClassFigures: ...
