# Type stub for the extension built from native/src/python.rs.
from collections.abc import Callable
from typing import Any

def fingerprint(query: bytes) -> bytes: ...
def query_id(fingerprint: bytes) -> str: ...
def digest_range(
    data: Any,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    release: bool = False,
) -> tuple[Any, ...]: ...
def range_handle(
    data: Any,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    release: bool = False,
    since: bytes | None = None,
    until: bytes | None = None,
    keep_event: Callable[[bytes | None, bytes | None, bytes | None], bool] | None = None,
    keep_class: Callable[[bytes], bool] | None = None,
    needs_db: bool = False,
    max_events: int | None = None,
) -> Range: ...

class Range:
    end: int
    newlines: int
    deferred_events: int

class Total:
    events: int
    no_statement: int
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
    def class_at(self, index: int) -> tuple[Any, ...]: ...
    def other(self) -> tuple[Any, ...] | None: ...
    def totals(self) -> tuple[Any, ...]: ...
