"""A report's units read one step ahead of their merge, in a second thread.

Reading a unit is mostly waiting (the server finds and sends its rows, or SQLite reads its
pages, both without the GIL) and merging one is mostly ``zlib`` inflate (also without the
GIL) and the core's merge: done in turn, the report waits for each read before it merges.
Done in two threads, the server's (or the disk's) work and the inflate run while the other
thread holds the GIL (docs/design/history.md, "A host glob's week under 5 s").

The units come out in the order the reader made them, so the merge, its ties and its
output are the same as read in turn. The reader owns the store's connection until it ends:
nothing else may use the store meanwhile.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

T = TypeVar("T")

#: Units read ahead of the merge (a host's unit of 2,000 classes is about 5 MB of rows).
AHEAD = 2

_END = object()


def prefetched(items: Iterator[T], ahead: int = AHEAD) -> Generator[T, None, None]:
    """``items`` as they are, made by a second thread up to ``ahead`` items ahead; an
    error of ``items`` is raised here at its place. Closing this early (an error of the
    consumer) stops the reader and waits for it, so the connection is free again."""
    box: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(entry: tuple[object, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                box.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((_END, exc))
            return
        finally:
            close = getattr(items, "close", None)
            if close is not None and stop.is_set():
                close()
        put((_END, None))

    reader = threading.Thread(target=read, name="govern-store-reader", daemon=True)
    reader.start()
    try:
        while True:
            item, error = box.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        reader.join()
