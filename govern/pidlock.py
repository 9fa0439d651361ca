"""One process at a time: an flock on a 0600 file that holds the owner's pid.

The kernel drops the lock when its holder dies (even by ``kill -9``), so a lock is never
stale; the pid inside only serves the message of the process that was refused.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


class LockHeld(Exception):
    """Another live process holds the lock."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder  # its pid, or "?" when it has not written one yet


def take(path: Path) -> IO[str]:
    """Lock ``path`` for this process or raise LockHeld; close the handle to release it."""
    handle = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o600), "r+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = handle.read().strip() or "?"
        handle.close()
        raise LockHeld(holder) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
