"""Keep a copy of what a govern process prints on stdout, for the JSON contract test.

The test session (tests/docs/plugin.py) puts this directory on PYTHONPATH and names a directory
in GOVERN_TEST_JSON_DIR. Python imports ``sitecustomize`` at start-up; in a
process that runs govern (``python -m govern …`` or the ``govern`` script), stdout is replaced by
a text stream over a tee: everything is written through to the real stdout unchanged (same
file descriptor, same terminal, so ``isatty`` and progress bars behave as before) and copied
to ``GOVERN_TEST_JSON_DIR/<pid>-<random>.out``. A ``.done`` file beside it, written at a normal exit,
tells the test the output is whole (a process killed by a test leaves none, and its output is
not judged). Forked children (the watchdog of ``govern run``) are not copied.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import sys


def _is_govern() -> bool:
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" in argv:
        index = argv.index("-m")
        return index + 1 < len(argv) and argv[index + 1] == "govern"
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == "govern"


class _Tee(io.BufferedIOBase):
    """Bytes to the real stdout, and a copy to a file, in the process that opened it."""

    def __init__(self, inner: io.BufferedIOBase, path: str) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._pid = os.getpid()
        self._copy: io.BufferedWriter | None = None
        self._finished = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    def write(self, data: bytes) -> int:  # type: ignore[override]
        written = self._inner.write(data)
        if os.getpid() == self._pid and not self._finished:
            if self._copy is None:
                self._copy = open(self._path, "wb")  # noqa: SIM115
            self._copy.write(bytes(data))
        return written if written is not None else len(data)

    def flush(self) -> None:
        self._inner.flush()
        if self._copy is not None and not self._finished:
            self._copy.flush()

    def close(self) -> None:
        """Flush, but leave the real stdout open: the interpreter closes it itself."""
        if not self.closed:
            self.flush()
        super().close()

    def finish(self) -> None:
        if os.getpid() != self._pid or self._finished:
            return
        self.flush()
        self._finished = True
        if self._copy is not None:
            self._copy.close()
            with open(self._path[: -len(".out")] + ".argv", "w", encoding="utf-8") as argv:
                argv.write("\n".join(getattr(sys, "orig_argv", sys.argv)))
            open(self._path[: -len(".out")] + ".done", "w").close()


def _install(directory: str) -> None:
    real = sys.stdout
    if real is None or not hasattr(real, "buffer"):
        return
    name = f"{os.getpid()}-{os.urandom(4).hex()}.out"  # pids are reused in a long session
    tee = _Tee(real.buffer, os.path.join(directory, name))
    sys.stdout = io.TextIOWrapper(
        tee,
        encoding=real.encoding,
        errors=real.errors,
        line_buffering=real.line_buffering,
        write_through=True,
    )

    def finish() -> None:
        with contextlib.suppress(ValueError):  # stdout already closed
            sys.stdout.flush()
        tee.finish()

    atexit.register(finish)


_directory = os.environ.get("GOVERN_TEST_JSON_DIR")
if _directory and _is_govern():
    _install(_directory)
