"""The shapes sqlglot accepted in earlier runs, kept in the state directory.

Importing sqlglot costs about 0.1 CPU-second, more than META001's grammar checks of a
whole digest once it is loaded, and a server's logs repeat the same statement shapes
day after day. So each shape sqlglot accepts (literals blanked, rules/catalog/parsing.py
``normalized``) is remembered as a 16-byte BLAKE2b hash in
``$XDG_STATE_HOME/govern/sqlglot-accepted`` (0600; never the SQL itself; in
``GOVERN_STATE``'s folder when that is set), and a run whose
shapes are all known there never imports sqlglot. The file is keyed by sqlglot's version
and :data:`FORMAT`: another version starts it afresh. Rejected shapes are not kept (the
finding needs sqlglot's own words, so sqlglot is loaded for them anyway). The file is a
cache: when it cannot be read or written, sqlglot decides, as without it.
"""

from __future__ import annotations

import hashlib
import os
from importlib.util import find_spec
from pathlib import Path

#: Raise when what a verdict means changes (parsing.py ``_parses``: dialect, errors caught).
FORMAT = 1
#: Hashes kept; past this the file starts afresh (1.6 MB).
MAX_SHAPES = 100_000
_SIZE = 16

_known: set[bytes] | None = None  # the file's hashes, read on first use
_known_at: Path | None = None  # … from this file
_valid = False  # the file exists with this version's header: new hashes are appended


def path() -> Path:
    """The file, next to the state file: in ``GOVERN_STATE``'s folder when that is set, else
    in govern/state.py's ``default_state_path`` folder (read here from the environment, so
    that this module imports nothing heavy)."""
    state = os.environ.get("GOVERN_STATE")
    if state:
        return Path(state).expanduser().parent / "sqlglot-accepted"
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "govern" / "sqlglot-accepted"


def shape_hash(shape: str) -> bytes:
    return hashlib.blake2b(shape.encode("utf-8", "surrogatepass"), digest_size=_SIZE).digest()


def accepted_before(shape: str) -> bool:
    """Did sqlglot (this version) accept ``shape`` in an earlier run?"""
    return shape_hash(shape) in _loaded()


def remember(shape: str) -> None:
    """``shape`` parses: append its hash to the file (16 bytes written at once, so
    concurrent runs do not mix records); the file starts afresh when it has none of
    this version's header, or :data:`MAX_SHAPES`."""
    global _known, _valid
    known = _loaded()
    found = shape_hash(shape)
    if found in known:
        return
    known.add(found)
    fresh = not _valid or len(known) > MAX_SHAPES
    if fresh:
        _known = {found}
    target = _known_at or path()
    try:
        if fresh:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if fresh else os.O_APPEND)
        descriptor = os.open(target, flags, 0o600)
        try:
            if fresh:
                os.fchmod(descriptor, 0o600)  # a file that was there kept its mode
            os.write(descriptor, (_header() + found) if fresh else found)
        finally:
            os.close(descriptor)
        _valid = True
    except OSError:
        return


def _loaded() -> set[bytes]:
    """The hashes of the file (read again when XDG_STATE_HOME changed: tests)."""
    global _known, _known_at, _valid
    target = path()
    if _known is None or target != _known_at:
        _known_at = target
        header = _header()
        try:
            data = target.read_bytes()
        except OSError:
            data = b""
        _valid = data.startswith(header)
        body = memoryview(data)[len(header) :] if _valid else memoryview(b"")
        _known = {bytes(body[at : at + _SIZE]) for at in range(0, len(body) - _SIZE + 1, _SIZE)}
    return _known


_header_bytes: bytes | None = None


def _header() -> bytes:
    """What the file starts with: the format and the version of sqlglot installed (read
    from its _version.py: importing sqlglot is what the file saves)."""
    global _header_bytes
    if _header_bytes is None:
        version = "?"
        spec = find_spec("sqlglot")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            try:
                text = (Path(folder) / "_version.py").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("__version__"):
                    version = line.split("=")[-1].strip().strip("'\"")
            break
        _header_bytes = f"govern sqlglot-accepted {FORMAT} sqlglot {version}\n".encode()
    return _header_bytes
